// The Emulation module; see DESIGN.md "Modules" for what it owns. Filled by its own issue.
