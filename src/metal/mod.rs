//! Apple Metal lanes: static AGX analysis (everywhere) and the runtime lane (macOS only).
