//! Graph-shape rules (placeholder).
