//! Renders results: terminal tables and JSON.
