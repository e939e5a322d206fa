import { join } from "node:path";
import { setImmediate as turn } from "node:timers/promises";
import { Decompress } from "fzstd";
import protobuf from "protobufjs";
import { extract } from "tar-stream";
import { z } from "zod";
import { projectRoot } from "../paths.js";
import { MAX_TEST_CASES } from "./ingest.js";

/**
 * Reads the bundle Trunk's analytics CLI uploads (`bundle.tar.zstd`, built by
 * trunk-io/analytics-cli bundle/src/bundler.rs): a tar, zstd-compressed, holding `meta.json`,
 * `internal.bin` (a protobuf TestReport of the results the client parsed), each JUnit file as
 * `junit/<n>`, and optionally `CODEOWNERS` and `bazel_bep.json`.
 */

/**
 * What a bundle may unpack to: a zstd bomb is cut off here, not when memory runs out. The files
 * meta.json lists count as often as it lists them, since each listing is read: a file listed
 * 1,000 times is 1,000 files to parse.
 */
export const MAX_UNPACKED_BYTES = 64 * 1024 * 1024;

/**
 * The decoder (fzstd) moves its whole window once per block it decodes, so a frame costs its
 * blocks × its window however little it unpacks to: 5 million 4-byte blocks under a 64 MiB
 * window, 20 MiB of body, would move 320 TB. What a bundle's frames move in all is bounded
 * above what honest ones need: 64 MiB of real reports compressed as zstd does at level 15
 * (4 MiB window) is ~1,100 blocks (4.4 GiB), at level 3 (2 MiB) ~4,100 (8 GiB); 34 MB of
 * one-line testcases, the most repetitive content measured, 4,518 blocks (18 GiB).
 */
export const MAX_WINDOW_BYTES_MOVED = 32 * 2 ** 30;

/** Decompression is fed this much of the body at a time, and lets other work run between slices once it has held the thread this long. */
const ZSTD_SLICE_BYTES = 2 * 1024;
/** The unpacked tar is parsed, and its text decoded, this much at a time, with a turn of the event loop between. */
const UNPACKED_SLICE_BYTES = 1024 * 1024;
const HOLD_MS = 10;

/** A bundle that cannot be read; the message says what is wrong with it. */
export class BundleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BundleError";
  }
}

// ---- zstd ---------------------------------------------------------------------------------------

const ZSTD_MAGIC = 0xfd2fb528;
const isSkippableFrame = (magic: number) => (magic & 0xfffffff0) >>> 0 === 0x184d2a50;

/**
 * Checks each frame's header before decompressing: the window a frame declares is allocated up
 * front by the decoder, so a header declaring more than `limit` is refused before it costs
 * memory. (A client compressing with zstd's levels, as Trunk's does at 15, declares a few MiB.)
 */
function checkFrames(data: Uint8Array, limit: number): void {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  let moved = 0;
  const checkMoved = (blocks: number, window: number) => {
    if (moved + blocks * window > MAX_WINDOW_BYTES_MOVED) {
      throw new BundleError(`has more zstd blocks than its window allows: decoding ${blocks} blocks under a window of ${window} bytes moves more than the limit of ${MAX_WINDOW_BYTES_MOVED / 2 ** 30} GiB`);
    }
  };
  while (at + 4 <= data.length) {
    const magic = view.getUint32(at, true);
    if (isSkippableFrame(magic)) {
      if (at + 8 > data.length) return;
      at += 8 + view.getUint32(at + 4, true);
      continue;
    }
    if (magic !== ZSTD_MAGIC) throw new BundleError(at === 0 ? "is not zstd-compressed (no zstd frame at its start)" : `has bytes that are not a zstd frame at offset ${at}`);
    if (at + 6 > data.length) return;
    const descriptor = data[at + 4]!;
    const singleSegment = (descriptor >> 5) & 1;
    const hasChecksum = (descriptor >> 2) & 1;
    const dictionaryBytes = [0, 1, 2, 4][descriptor & 3]!;
    const sizeFlag = descriptor >> 6;
    const sizeBytes = sizeFlag === 0 ? singleSegment : 1 << sizeFlag;
    let header = at + 5;
    let window = 0;
    if (!singleSegment) {
      const w = data[header++]!;
      const base = 2 ** (10 + (w >> 3));
      window = base + (base / 8) * (w & 7);
    }
    header += dictionaryBytes;
    if (header + sizeBytes > data.length) return;
    let contentSize = 0;
    for (let i = sizeBytes - 1; i >= 0; i--) contentSize = contentSize * 256 + data[header + i]!;
    if (sizeBytes === 2) contentSize += 256;
    if (singleSegment) window = contentSize;
    if (window > limit || contentSize > limit) throw new BundleError(`unpacks to more than the limit of ${limit / (1024 * 1024)} MiB`);
    at = header + sizeBytes;
    // Blocks: a 3-byte header (last flag, type, size); an RLE block holds one byte.
    let blocks = 0;
    for (;;) {
      if (at + 3 > data.length) {
        checkMoved(blocks, window);
        return;
      }
      const block = data[at]! | (data[at + 1]! << 8) | (data[at + 2]! << 16);
      const type = (block >> 1) & 3;
      at += 3 + (type === 1 ? 1 : block >>> 3);
      blocks++;
      if (block & 1) break;
    }
    checkMoved(blocks, window);
    moved += blocks * window;
    if (hasChecksum) at += 4;
  }
}

/**
 * Decompresses `data`, refusing output beyond `limit` bytes as soon as it is produced. The
 * decoder is fed a slice at a time and yields to other requests between slices (fzstd decodes
 * some 10–50 MB/s: a 64 MiB bundle is seconds of work).
 */
export async function unzstd(data: Uint8Array, limit = MAX_UNPACKED_BYTES): Promise<Buffer> {
  checkFrames(data, limit);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const stream = new Decompress((chunk) => {
    size += chunk.length;
    if (size > limit) throw new BundleError(`unpacks to more than the limit of ${limit / (1024 * 1024)} MiB`);
    // The decoder reuses its window: what it hands out is copied.
    chunks.push(chunk.slice());
  });
  try {
    if (data.length === 0) stream.push(data, true);
    let held = performance.now();
    for (let at = 0; at < data.length; at += ZSTD_SLICE_BYTES) {
      stream.push(data.subarray(at, at + ZSTD_SLICE_BYTES), at + ZSTD_SLICE_BYTES >= data.length);
      if (performance.now() - held > HOLD_MS) {
        await turn();
        held = performance.now();
      }
    }
  } catch (error) {
    if (error instanceof BundleError) throw error;
    throw new BundleError(`is not a complete zstd stream (${(error as Error).message}): was the upload cut short?`);
  }
  return Buffer.concat(chunks, size);
}

// ---- tar ----------------------------------------------------------------------------------------

/** The regular files of a tar archive, by path. */
async function untar(data: Buffer): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const archive = extract();
  const reading = (async () => {
    for await (const entry of archive) {
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(chunk as Buffer);
      if (entry.header.type === "file") files.set(entry.header.name.replace(/^\.\//, ""), Buffer.concat(chunks));
    }
  })();
  let at = 0;
  for (; at + UNPACKED_SLICE_BYTES < data.length; at += UNPACKED_SLICE_BYTES) {
    archive.write(data.subarray(at, at + UNPACKED_SLICE_BYTES));
    await turn();
  }
  archive.end(data.subarray(at));
  try {
    await reading;
  } catch (error) {
    throw new BundleError(`is not a complete tar archive (${(error as Error).message}): was the upload cut short?`);
  }
  return files;
}

// ---- meta.json ----------------------------------------------------------------------------------

/**
 * The fields of meta.json Greenline reads (trunk-io/analytics-cli bundle/src/bundle_meta.rs,
 * BundleMetaV0_7_8, and context/src/repo/mod.rs, BundleRepo); the others are ignored.
 */
const ZBundledFile = z.looseObject({ path: z.string().min(1) });
const ZMeta = z.looseObject({
  version: z.string(),
  org: z.string(),
  repo: z.looseObject({
    repo: z.looseObject({ host: z.string().min(1), owner: z.string().min(1), name: z.string().min(1) }),
    repo_head_sha: z.string().regex(/^[0-9a-f]{7,64}$/i, "must be a commit SHA"),
    repo_head_branch: z.string(),
  }),
  bundle_upload_id: z.string(),
  file_sets: z.array(z.looseObject({ file_set_type: z.string().optional(), files: z.array(ZBundledFile) })),
  envs: z.record(z.string(), z.string()).optional().default({}),
  variant: z.string().nullish(),
  internal_bundled_file: ZBundledFile.nullish(),
  codeowners: z.looseObject({ path: z.string() }).nullish(),
});
export type BundleMeta = z.output<typeof ZMeta>;

// ---- internal.bin -------------------------------------------------------------------------------

/** Greenline's own copy of the fields it reads of Trunk's test report (proto/trunk/test_context.proto). */
const PROTO_FILE = join(projectRoot, "proto/trunk/test_context.proto");
let testReportType: protobuf.Type | undefined;

function testReport(): protobuf.Type {
  testReportType ??= protobuf.loadSync(PROTO_FILE).lookupType("test_context.test_run.TestReport");
  return testReportType;
}

type Timestamp = { seconds: number; nanos: number } | null;
export const RUN_STATUS = { success: 1, failure: 2, skipped: 3 } as const;
export type TestCaseRun = {
  id: string;
  name: string;
  classname: string;
  file: string;
  parentName: string;
  status: number;
  startedAt: Timestamp;
  finishedAt: Timestamp;
  statusOutputMessage: string;
  isQuarantined: boolean;
  testOutput: { text: string; message: string } | null;
};
export type TestReport = { testResults: { testCaseRuns: TestCaseRun[] }[]; uploaderMetadata: { variant: string } | null };

/**
 * The TestCaseRuns a TestReport's bytes hold (test_results = 1, each a TestResult whose
 * test_case_runs = 1), counted on the wire without decoding: decoded, each becomes an object
 * of a dozen fields, so 64 MiB of two-byte empty runs would be gigabytes. Malformed bytes end
 * the count (decoding then says what is wrong).
 */
export function countTestCaseRuns(bytes: Uint8Array): number {
  let count = 0;
  const fields = (start: number, end: number, onField: (field: number, from: number, to: number) => void) => {
    let at = start;
    const varint = () => {
      let value = 0;
      for (let shift = 0; at < end && shift < 53; shift += 7) {
        const byte = bytes[at++]!;
        value += (byte & 0x7f) * 2 ** shift;
        if (byte < 0x80) return value;
      }
      return -1;
    };
    while (at < end) {
      const key = varint();
      if (key < 0) return;
      const type = key % 8;
      if (type === 0) {
        if (varint() < 0) return;
      } else if (type === 1) at += 8;
      else if (type === 5) at += 4;
      else if (type === 2) {
        const length = varint();
        if (length < 0 || at + length > end) return;
        onField(Math.floor(key / 8), at, at + length);
        at += length;
      } else return;
    }
  };
  fields(0, bytes.length, (field, from, to) => {
    if (field === 1) fields(from, to, (inner) => inner === 1 && count++);
  });
  return count;
}

/** Decodes internal.bin with the schema generated from the .proto file. */
export function decodeTestReport(bytes: Uint8Array, path = "internal.bin"): TestReport {
  const type = testReport();
  try {
    return type.toObject(type.decode(bytes), { longs: Number, enums: Number, defaults: true }) as TestReport;
  } catch (error) {
    throw new BundleError(`${path} is not a test report (${(error as Error).message})`);
  }
}

/** Encodes a test report as the client does (for tests and tools). */
export function encodeTestReport(report: object): Uint8Array {
  const type = testReport();
  return type.encode(type.fromObject(report)).finish();
}

// ---- the bundle ---------------------------------------------------------------------------------

export type Bundle = {
  meta: BundleMeta;
  /** The JUnit files, in the order the client numbered them. */
  junit: { path: string; xml: string }[];
  /** The test report the client parsed from them, when the bundle has one. */
  report: TestReport | null;
  codeowners: string | undefined;
};

/**
 * The bytes of the files meta.json lists, each counted as often as it is listed, within the
 * unpack limit: else a file listed 1,000 times would be parsed 1,000 times (issue 22: a 78 KB
 * bundle ran the process out of memory).
 */
function checkListedBytes(files: Map<string, Buffer>, listed: string[]): void {
  let total = 0;
  const times = new Map<string, number>();
  for (const path of listed) {
    total += files.get(path)!.length;
    times.set(path, (times.get(path) ?? 0) + 1);
  }
  if (total <= MAX_UNPACKED_BYTES) return;
  const [most, count] = [...times].reduce((a, b) => (b[1] > a[1] ? b : a));
  const repeated = count > 1 ? ` (${most} is listed ${count} times, and counts each time)` : "";
  throw new BundleError(`lists files that come to more than the limit of ${MAX_UNPACKED_BYTES / (1024 * 1024)} MiB${repeated}`);
}

/** A file as UTF-8 text, decoded a slice at a time with a turn of the event loop between slices. */
async function text(files: Map<string, Buffer>, path: string): Promise<string> {
  const bytes = files.get(path)!;
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let out = "";
  try {
    for (let at = 0; at < bytes.length; at += UNPACKED_SLICE_BYTES) {
      out += decoder.decode(bytes.subarray(at, at + UNPACKED_SLICE_BYTES), { stream: true });
      if (at + UNPACKED_SLICE_BYTES < bytes.length) await turn();
    }
    return out + decoder.decode();
  } catch {
    throw new BundleError(`${path} is not UTF-8 text`);
  }
}

/** Decompresses, unpacks and decodes a bundle; any part missing or malformed is a BundleError naming it. */
export async function readBundle(compressed: Uint8Array): Promise<Bundle> {
  const files = await untar(await unzstd(compressed));
  if (!files.has("meta.json")) throw new BundleError("has no meta.json");
  let json: unknown;
  try {
    json = JSON.parse(await text(files, "meta.json"));
  } catch (error) {
    throw error instanceof BundleError ? error : new BundleError(`meta.json is not JSON (${(error as Error).message})`);
  }
  const parsed = ZMeta.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.slice(0, 5).map((issue) => `${issue.path.map(String).join(".") || "(meta.json)"}: ${issue.message}`);
    throw new BundleError(`meta.json: ${problems.join("; ")}`);
  }
  const meta = parsed.data;
  const internal = meta.internal_bundled_file?.path;
  const sets = meta.file_sets.map((set) => ({ internal: set.file_set_type === "Internal", paths: set.files.map((f) => f.path) }));
  const junitPaths = sets.filter((set) => !set.internal).flatMap((set) => set.paths);
  // With internal.bin the client leaves its internal file sets out of the archive (bundler.rs); without, they are the report.
  const reportPaths = internal ? [internal] : sets.filter((set) => set.internal).flatMap((set) => set.paths);
  // Every file meta.json lists must be in the archive: a tar cut at an entry's boundary reads as a shorter archive.
  for (const path of [...junitPaths, ...reportPaths]) {
    if (!files.has(path)) throw new BundleError(`lacks ${path}, which meta.json lists: was the upload cut short?`);
  }
  checkListedBytes(files, [...junitPaths, ...reportPaths]);
  // A file listed again is decoded once (each listing is still read: it counted above).
  const decoded = new Map<string, string>();
  const junit: Bundle["junit"] = [];
  for (const path of junitPaths) {
    let xml = decoded.get(path);
    if (xml === undefined) decoded.set(path, (xml = await text(files, path)));
    junit.push({ path, xml });
  }
  let runs = 0;
  for (const path of reportPaths) {
    runs += countTestCaseRuns(files.get(path)!);
    if (runs > MAX_TEST_CASES) throw new BundleError(`${path} holds more than the limit of ${MAX_TEST_CASES.toLocaleString("en-US")} test cases per upload`);
  }
  let report: TestReport | null = null;
  for (const path of reportPaths) {
    const part = decodeTestReport(files.get(path)!, path);
    if (report) report.testResults.push(...part.testResults);
    else report = part;
  }
  return { meta, junit, report, codeowners: files.has("CODEOWNERS") ? await text(files, "CODEOWNERS") : undefined };
}
