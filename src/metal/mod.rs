//! Apple Metal lanes.
//!
//! - Static AGX analysis of applegpu disassembly (any OS): [`listing`], [`operands`], [`cost`],
//!   [`loops`], [`occupancy`], [`analysis`], [`suggest`], [`annotate`].
//! - The trace lane's xctrace export parser is pure, so it lives with the backend that records
//!   the trace (`profilers::metal::xctrace`); its records go through reports like any other.
//! - The runtime lane (device, compile, dispatch, GPU timestamps): [`runtime`]; its Metal calls
//!   build only on macOS, its validation everywhere.

pub mod analysis;
pub mod annotate;
pub mod cost;
pub mod listing;
pub mod loops;
pub mod occupancy;
pub mod operands;
pub mod runtime;
pub mod suggest;

pub use analysis::{Analysis, AnalyzeOptions};
pub use cost::CostModel;
pub use listing::{Listing, parse_listing};

/// Analyses a parsed listing: the measurements, then the suggestions drawn from them.
pub fn analyze(listing: &Listing, options: AnalyzeOptions) -> Analysis {
    let mut analysis = analysis::measure(listing, options);
    analysis.suggestions = suggest::suggestions(&analysis);
    analysis
}

/// Parses and analyses applegpu listing text in one call.
pub fn analyze_text(text: &str, options: AnalyzeOptions) -> Analysis {
    analyze(&parse_listing(text), options)
}
