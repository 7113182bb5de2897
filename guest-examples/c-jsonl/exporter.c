// JSON lines exporter in C (wasi-libc + wit-bindgen's C bindings): the same lines as the Rust
// example. Settings: `path` (a file in a pre-opened directory; `{key}` expands to a resource
// attribute) or none for stdout. Spans only (world `exporter`): metrics and logs are the Rust,
// Python and JavaScript examples' (see README).

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter.h"

static FILE *out = NULL;
static int is_open = 0;

// A growable text buffer: one batch is written with one fwrite.
typedef struct {
  char *data;
  size_t len, cap;
} buf_t;

static void put(buf_t *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    b->data = realloc(b->data, cap);
    if (!b->data) abort();
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
}

static void puts_(buf_t *b, const char *s) { put(b, s, strlen(s)); }

static void putf(buf_t *b, const char *fmt, unsigned long long v) {
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, fmt, v);
  put(b, tmp, (size_t)n);
}

static void put_i64(buf_t *b, int64_t v) {
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
  put(b, tmp, (size_t)n);
}

// A double that parses back to the same value, and as a float (`2.0`, not `2`).
static void put_f64(buf_t *b, double v) {
  if (!isfinite(v)) {
    puts_(b, "null");
    return;
  }
  char tmp[40];
  int n = snprintf(tmp, sizeof tmp, "%.17g", v);
  put(b, tmp, (size_t)n);
  if (!strpbrk(tmp, ".eE")) puts_(b, ".0");
}

static void put_str(buf_t *b, const uint8_t *s, size_t n) {
  put(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      put(b, esc, 2);
    } else if (c == '\n') {
      puts_(b, "\\n");
    } else if (c == '\r') {
      puts_(b, "\\r");
    } else if (c == '\t') {
      puts_(b, "\\t");
    } else if (c < 0x20) {
      putf(b, "\\u%04llx", c);
    } else {
      put(b, (const char *)&c, 1);
    }
  }
  put(b, "\"", 1);
}

static void put_string(buf_t *b, exporter_string_t *s) { put_str(b, s->ptr, s->len); }

static void put_hex(buf_t *b, uint64_t v) { putf(b, "%016llx", v); }

static void put_value(buf_t *b, lens_exporter_types_value_t *v) {
  switch (v->tag) {
    case LENS_EXPORTER_TYPES_VALUE_STRING: put_string(b, &v->val.string); break;
    case LENS_EXPORTER_TYPES_VALUE_BOOL: puts_(b, v->val.bool_ ? "true" : "false"); break;
    case LENS_EXPORTER_TYPES_VALUE_S64: put_i64(b, v->val.s64); break;
    case LENS_EXPORTER_TYPES_VALUE_F64: put_f64(b, v->val.f64); break;
    case LENS_EXPORTER_TYPES_VALUE_BYTES:
      put(b, "[", 1);
      for (size_t i = 0; i < v->val.bytes.len; i++) {
        if (i) put(b, ",", 1);
        put_i64(b, v->val.bytes.ptr[i]);
      }
      put(b, "]", 1);
      break;
    case LENS_EXPORTER_TYPES_VALUE_STRING_ARRAY:
      put(b, "[", 1);
      for (size_t i = 0; i < v->val.string_array.len; i++) {
        if (i) put(b, ",", 1);
        put_string(b, &v->val.string_array.ptr[i]);
      }
      put(b, "]", 1);
      break;
    case LENS_EXPORTER_TYPES_VALUE_BOOL_ARRAY:
      put(b, "[", 1);
      for (size_t i = 0; i < v->val.bool_array.len; i++) {
        if (i) put(b, ",", 1);
        puts_(b, v->val.bool_array.ptr[i] ? "true" : "false");
      }
      put(b, "]", 1);
      break;
    case LENS_EXPORTER_TYPES_VALUE_S64_ARRAY:
      put(b, "[", 1);
      for (size_t i = 0; i < v->val.s64_array.len; i++) {
        if (i) put(b, ",", 1);
        put_i64(b, v->val.s64_array.ptr[i]);
      }
      put(b, "]", 1);
      break;
    case LENS_EXPORTER_TYPES_VALUE_F64_ARRAY:
      put(b, "[", 1);
      for (size_t i = 0; i < v->val.f64_array.len; i++) {
        if (i) put(b, ",", 1);
        put_f64(b, v->val.f64_array.ptr[i]);
      }
      put(b, "]", 1);
      break;
  }
}

static void put_attributes(buf_t *b, lens_exporter_types_list_key_value_t *kvs) {
  put(b, "{", 1);
  for (size_t i = 0; i < kvs->len; i++) {
    if (i) put(b, ",", 1);
    put_string(b, &kvs->ptr[i].key);
    put(b, ":", 1);
    put_value(b, &kvs->ptr[i].value);
  }
  put(b, "}", 1);
}

static void put_trace_id(buf_t *b, lens_exporter_types_trace_id_t *t) {
  put(b, "\"", 1);
  put_hex(b, t->f0);
  put_hex(b, t->f1);
  put(b, "\"", 1);
}

static const char *KINDS[] = {"client", "server", "producer", "consumer", "internal"};

static void put_span(buf_t *b, lens_exporter_types_span_data_t *s, exporter_string_t *scope) {
  puts_(b, "{\"name\":");
  put_string(b, &s->name);
  puts_(b, ",\"trace_id\":");
  put_trace_id(b, &s->span_context.trace_id);
  puts_(b, ",\"span_id\":\"");
  put_hex(b, s->span_context.span_id);
  puts_(b, "\",\"parent_span_id\":\"");
  put_hex(b, s->parent_span_id.is_some ? s->parent_span_id.val : 0);
  puts_(b, "\",\"kind\":\"");
  puts_(b, KINDS[s->span_kind]);
  puts_(b, "\",\"start_unix_nano\":");
  putf(b, "%llu", s->start_time);
  puts_(b, ",\"end_unix_nano\":");
  putf(b, "%llu", s->end_time);
  puts_(b, ",\"duration_ns\":");
  putf(b, "%llu", s->end_time > s->start_time ? s->end_time - s->start_time : 0);
  puts_(b, ",\"status\":");
  if (s->status.tag == LENS_EXPORTER_TYPES_STATUS_ERROR) {
    puts_(b, "{\"code\":\"error\",\"message\":");
    put_string(b, &s->status.val.error);
    puts_(b, "}");
  } else {
    puts_(b, s->status.tag == LENS_EXPORTER_TYPES_STATUS_OK ? "{\"code\":\"ok\"}" : "{\"code\":\"unset\"}");
  }
  puts_(b, ",\"attributes\":");
  put_attributes(b, &s->attributes);
  puts_(b, ",\"events\":[");
  for (size_t i = 0; i < s->events.len; i++) {
    lens_exporter_types_event_t *e = &s->events.ptr[i];
    if (i) put(b, ",", 1);
    puts_(b, "{\"name\":");
    put_string(b, &e->name);
    puts_(b, ",\"time_unix_nano\":");
    putf(b, "%llu", e->time);
    puts_(b, ",\"attributes\":");
    put_attributes(b, &e->attributes);
    puts_(b, "}");
  }
  puts_(b, "],\"links\":[");
  for (size_t i = 0; i < s->links.len; i++) {
    lens_exporter_types_link_t *l = &s->links.ptr[i];
    if (i) put(b, ",", 1);
    puts_(b, "{\"trace_id\":");
    put_trace_id(b, &l->span_context.trace_id);
    puts_(b, ",\"span_id\":\"");
    put_hex(b, l->span_context.span_id);
    puts_(b, "\",\"attributes\":");
    put_attributes(b, &l->attributes);
    puts_(b, "}");
  }
  puts_(b, "],\"scope\":");
  put_string(b, scope);
  puts_(b, "}\n");
}

// Returned strings are freed by the bindings after the call: copy (`_dup`), never borrow (`_set`).
static void set_err(exporter_string_t *err, const char *msg) { exporter_string_dup(err, msg); }

// `{key}` in `template` replaced by the resource attribute `key` (strings as-is).
static char *expand(exporter_string_t *template, lens_exporter_types_resource_t *resource) {
  buf_t b = {0};
  size_t i = 0;
  while (i < template->len) {
    if (template->ptr[i] == '{') {
      size_t j = i + 1;
      while (j < template->len && template->ptr[j] != '}') j++;
      int done = 0;
      for (size_t k = 0; j < template->len && k < resource->attributes.len && !done; k++) {
        lens_exporter_types_key_value_t *kv = &resource->attributes.ptr[k];
        if (kv->key.len == j - i - 1 && memcmp(kv->key.ptr, template->ptr + i + 1, kv->key.len) == 0) {
          if (kv->value.tag == LENS_EXPORTER_TYPES_VALUE_STRING) {
            put(&b, (const char *)kv->value.val.string.ptr, kv->value.val.string.len);
          } else {
            put_value(&b, &kv->value);
          }
          done = 1;
        }
      }
      if (done) {
        i = j + 1;
        continue;
      }
    }
    put(&b, (const char *)&template->ptr[i], 1);
    i++;
  }
  put(&b, "", 1);
  return b.data;
}

bool exports_lens_exporter_span_exporter_init(exporter_list_tuple2_string_string_t *settings,
                                              exports_lens_exporter_span_exporter_resource_t *resource,
                                              exports_lens_exporter_span_exporter_encoding_t *ret,
                                              exporter_string_t *err) {
  bool ok = true;
  out = stdout;
  for (size_t i = 0; i < settings->len; i++) {
    exporter_tuple2_string_string_t *kv = &settings->ptr[i];
    if (kv->f0.len == 4 && memcmp(kv->f0.ptr, "path", 4) == 0) {
      char *path = expand(&kv->f1, resource);
      out = fopen(path, "a");
      if (!out) {
        char msg[512];
        snprintf(msg, sizeof msg, "cannot open %s (is its directory pre-opened read-write?)", path);
        set_err(err, msg);
        ok = false;
      }
      free(path);
    }
  }
  exporter_list_tuple2_string_string_free(settings);
  exports_lens_exporter_span_exporter_resource_free(resource);
  if (ok) {
    is_open = 1;
    *ret = LENS_EXPORTER_TYPES_ENCODING_TYPED;
  }
  return ok;
}

// A permanent failure: the host drops the batch (`retryable` would make it send it again).
static void reject(exports_lens_exporter_span_exporter_export_error_t *err, const char *msg) {
  err->tag = LENS_EXPORTER_TYPES_EXPORT_ERROR_REJECTED;
  exporter_string_dup(&err->val.rejected, msg);
}

bool exports_lens_exporter_span_exporter_export(exports_lens_exporter_span_exporter_batch_t *batch,
                                                exports_lens_exporter_span_exporter_export_error_t *err) {
  bool ok = true;
  if (!is_open) {
    reject(err, "export after shutdown");
    ok = false;
  } else if (batch->tag != LENS_EXPORTER_TYPES_BATCH_TYPED) {
    reject(err, "this exporter asked for typed batches");
    ok = false;
  } else {
    buf_t b = {0};
    for (size_t g = 0; g < batch->val.typed.len; g++) {
      lens_exporter_types_scope_spans_t *group = &batch->val.typed.ptr[g];
      for (size_t i = 0; i < group->spans.len; i++) put_span(&b, &group->spans.ptr[i], &group->scope.name);
    }
    // One write per batch: every write is a host call.
    if (b.len && (fwrite(b.data, 1, b.len, out) != b.len || fflush(out) != 0)) {
      reject(err, "write failed");
      ok = false;
    }
    free(b.data);
  }
  exports_lens_exporter_span_exporter_batch_free(batch);
  return ok;
}

bool exports_lens_exporter_span_exporter_force_flush(exporter_string_t *err) {
  if (out && fflush(out) != 0) {
    set_err(err, "flush failed");
    return false;
  }
  return true;
}

bool exports_lens_exporter_span_exporter_shutdown(exporter_string_t *err) {
  if (!is_open) {
    set_err(err, "already shut down");
    return false;
  }
  is_open = 0;
  if (out && out != stdout) fclose(out);
  out = NULL;
  return true;
}
