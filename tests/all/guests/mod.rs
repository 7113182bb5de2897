//! The example guests of every language, the guest SDKs, and `lens check`.

mod check;
mod examples;
mod http_templates;
mod language_signals;
mod languages;
mod python_lazy_imports;
mod python_sdk;
mod vendor_http;
