#!/usr/bin/env node
// The `greenline` command. `npm install` builds dist/ (the prepare script).
await import("../dist/src/cli/main.js");
