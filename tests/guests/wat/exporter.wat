;; The smallest `lens:exporter/exporter` in WAT, made a component by `build.rs` (wit-component):
;; `init` asks for `otlp-protobuf`, every call succeeds. The hostile variants are this component
;; with more core instances appended (many memories, large tables, a looping start function).
(module
  (memory (export "memory") 1)
  ;; A bump allocator for the arguments the host lowers; each call's post-return resets it.
  (global $bump (mut i32) (i32.const 1024))
  (func (export "cabi_realloc") (param $old i32) (param $old_size i32) (param $align i32)
        (param $size i32) (result i32)
    (local $p i32)
    (local.set $p
      (i32.and (i32.add (global.get $bump) (i32.sub (local.get $align) (i32.const 1)))
               (i32.sub (i32.const 0) (local.get $align))))
    (global.set $bump (i32.add (local.get $p) (local.get $size)))
    (block $fits
      (br_if $fits (i32.le_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536))))
      (if (i32.eq (i32.const -1)
            (memory.grow
              (i32.add (i32.const 1)
                (i32.shr_u (i32.sub (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
                           (i32.const 16)))))
        (then unreachable)))
    (local.get $p))
  ;; result<encoding, string> at 16: ok, otlp-protobuf (1).
  (func (export "lens:exporter/span-exporter@0.2.0#init")
        (param i32 i32 i32 i32 i32 i32 i32) (result i32)
    (i32.store8 (i32.const 16) (i32.const 0))
    (i32.store8 (i32.const 20) (i32.const 1))
    (i32.const 16))
  ;; result<_, string> at 32: ok.
  (func (export "lens:exporter/span-exporter@0.2.0#export") (param i32 i32 i32) (result i32)
    (i32.store8 (i32.const 32) (i32.const 0))
    (i32.const 32))
  (func (export "lens:exporter/span-exporter@0.2.0#force-flush") (result i32)
    (i32.store8 (i32.const 32) (i32.const 0))
    (i32.const 32))
  (func (export "lens:exporter/span-exporter@0.2.0#shutdown") (result i32)
    (i32.store8 (i32.const 32) (i32.const 0))
    (i32.const 32))
  (func (export "cabi_post_lens:exporter/span-exporter@0.2.0#init") (param i32)
    (global.set $bump (i32.const 1024)))
  (func (export "cabi_post_lens:exporter/span-exporter@0.2.0#export") (param i32)
    (global.set $bump (i32.const 1024))))
