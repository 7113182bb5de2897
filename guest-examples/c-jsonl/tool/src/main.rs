//! `lens-c-guest-tool bindgen WIT_DIR WORLD OUT_DIR` writes the C bindings of a world;
//! `lens-c-guest-tool component CORE.wasm OUT.wasm` turns a wasi-libc reactor module into a
//! component with the wasi_snapshot_preview1 reactor adapter.

use anyhow::{Context, Result, bail};
use wit_bindgen_core::wit_parser::Resolve;

fn bindgen(wit: &str, world: &str, out: &str) -> Result<()> {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve
        .push_path(wit)
        .with_context(|| format!("parsing {wit}"))?;
    let world = resolve.select_world(&[pkg], Some(world))?;
    let mut files = wit_bindgen_core::Files::default();
    let mut generator = wit_bindgen_c::Opts::default().build();
    generator.generate(&mut resolve, world, &mut files)?;
    std::fs::create_dir_all(out)?;
    for (name, contents) in files.iter() {
        std::fs::write(std::path::Path::new(out).join(name), contents)
            .with_context(|| format!("writing {name}"))?;
    }
    Ok(())
}

fn component(core: &str, out: &str) -> Result<()> {
    let module = std::fs::read(core).with_context(|| format!("reading {core}"))?;
    let bytes = wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&module)?
        .adapter(
            "wasi_snapshot_preview1",
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )?
        .encode()?;
    std::fs::write(out, bytes).with_context(|| format!("writing {out}"))
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [_, "bindgen", wit, world, out] => bindgen(wit, world, out),
        [_, "component", core, out] => component(core, out),
        _ => bail!(
            "usage: lens-c-guest-tool bindgen WIT_DIR WORLD OUT_DIR | component CORE.wasm OUT.wasm"
        ),
    }
}
