import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { projectRoot } from "../paths.js";

/**
 * The dashboard's scripts and styles, served by Greenline itself (no CDN) under URLs that carry
 * a hash of their content, so a browser may cache each for good: htmx and its SSE extension,
 * uPlot, and the dashboard's own client module, stylesheet and icon. Read once at start.
 */
type Asset = { name: string; url: string; type: string; body: Buffer; gzip: Buffer };

const SOURCES: Record<string, { path: string; type: string }> = {
  "htmx.js": { path: "node_modules/htmx.org/dist/htmx.min.js", type: "text/javascript; charset=utf-8" },
  "htmx-sse.js": { path: "node_modules/htmx-ext-sse/dist/sse.min.js", type: "text/javascript; charset=utf-8" },
  "uplot.js": { path: "node_modules/uplot/dist/uPlot.iife.min.js", type: "text/javascript; charset=utf-8" },
  "uplot.css": { path: "node_modules/uplot/dist/uPlot.min.css", type: "text/css; charset=utf-8" },
  "app.js": { path: "src/web/assets/app.js", type: "text/javascript; charset=utf-8" },
  "app.css": { path: "src/web/assets/app.css", type: "text/css; charset=utf-8" },
  "favicon.svg": { path: "src/web/assets/favicon.svg", type: "image/svg+xml" },
};

export type AssetName = keyof typeof SOURCES;

export class Assets {
  readonly #byUrl = new Map<string, Asset>();
  readonly #byName = new Map<string, Asset>();

  constructor(root = projectRoot) {
    for (const [name, source] of Object.entries(SOURCES)) {
      const body = readFileSync(join(root, source.path));
      const hash = createHash("sha256").update(body).digest("hex").slice(0, 12);
      const dot = name.lastIndexOf(".");
      const url = `/assets/${name.slice(0, dot)}.${hash}${name.slice(dot)}`;
      const asset = { name, url, type: source.type, body, gzip: gzipSync(body, { level: 9 }) };
      this.#byUrl.set(url, asset);
      this.#byName.set(name, asset);
    }
  }

  /** The hashed URL of the asset `name`. */
  url(name: AssetName): string {
    return this.#byName.get(name)!.url;
  }

  byUrl(url: string): Asset | undefined {
    return this.#byUrl.get(url);
  }

  /** Bytes a first visit downloads, gzip-compressed (the page weight the issue measures). */
  gzipBytes(): number {
    return [...this.#byName.values()].reduce((sum, a) => sum + a.gzip.length, 0);
  }
}
