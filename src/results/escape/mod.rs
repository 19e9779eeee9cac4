//! One rule for text from outside polyprof (kernel names, labels, paths, a candidate's
//! messages, cache keys): it is escaped for the place it goes, in one file per destination,
//! and every exporter and printer calls these and nothing else (docs/reports.md, "Escaping").
//!
//! - [`html`]: element content and attribute values of HTML and SVG.
//! - [`json_in_html`]: JSON inside a page's `<script>` element.
//! - [`terminal`]: a terminal or a plain-text file: control characters and escape sequences
//!   shown visibly, never sent.
//! - [`markdown`]: inline Markdown (a table cell of a CI summary).
//! - [`junit`]: text in JUnit XML, which cannot hold most control characters even escaped.

pub mod html;
pub mod json_in_html;
pub mod junit;
pub mod markdown;
pub mod terminal;
