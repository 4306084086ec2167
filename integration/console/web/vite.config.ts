import { defineConfig } from "vite";

// The console is embedded in the engine (integration/console, go:embed) and
// served under a strict Content-Security-Policy: no inline script or style,
// nothing from another origin. So: no module-preload polyfill (it would be
// inlined), no assets inlined as data: URLs, CSS in its own file, and every
// file under assets/ named by its content's hash (cached as immutable).
export default defineConfig({
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "../dist",
    // The Makefile removes the previous build; emptying the directory would
    // also remove the committed placeholder (not-built.txt).
    emptyOutDir: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    sourcemap: false,
    target: "es2022",
  },
  server: { proxy: { "/api": "http://127.0.0.1:7700", "/metrics": "http://127.0.0.1:7700" } },
});
