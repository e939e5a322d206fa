import type { NextFunction, Request, Response } from "express";
import { AppError } from "../app/errors.js";
import { NotUtf8Error, parseJsonBody } from "../formats/json.js";
import { closeAfterAnswer } from "../net.js";

/**
 * Reads a JSON request body of at most `limit` bytes. An oversized body is refused as soon as
 * it is known to be too large (from Content-Length, or while streaming) without reading the
 * rest: the answer is sent and the connection closed. (body-parser drains the whole body
 * before answering, which lets a client hold the server with an endless body.)
 */
export function jsonBody(limit: number) {
  return (req: Request, res: Response, next: NextFunction) => {
    const refuse = (error: AppError) => {
      closeAfterAnswer(req, res);
      next(error);
    };
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > limit) return refuse(tooLarge(limit, declared));
    const type = req.headers["content-type"];
    if (!type || !req.is("application/json")) return refuse(notJson(type));
    const charset = /charset=([^;]+)/i.exec(type)?.[1]?.trim().replace(/"/g, "").toLowerCase();
    if (charset && charset !== "utf-8" && charset !== "utf8") return refuse(new AppError("unsupported_media_type", `charset must be utf-8, not ${charset}`));
    const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding !== "identity") return refuse(new AppError("unsupported_media_type", `Content-Encoding ${encoding} is not supported`));

    collect(req, limit, declared, refuse, (joined) => {
      try {
        req.body = parseJsonBody(joined);
      } catch (parseError) {
        const rule = parseError instanceof NotUtf8Error ? "is not valid UTF-8" : "is not valid JSON";
        return next(new AppError("invalid_argument", `malformed JSON: ${(parseError as Error).message}`, [{ path: "(body)", message: rule }]));
      }
      next();
    });
  };
}

/**
 * Reads a request body of any type, of at most `limit` bytes, into `req.body` as a Buffer:
 * refused as jsonBody refuses an oversized one. A Content-Encoding is refused (the body is
 * read as sent).
 */
export function rawBody(limit: number) {
  return (req: Request, res: Response, next: NextFunction) => {
    const refuse = (error: AppError) => {
      closeAfterAnswer(req, res);
      next(error);
    };
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > limit) return refuse(tooLarge(limit, declared));
    const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding !== "identity") return refuse(new AppError("unsupported_media_type", `Content-Encoding ${encoding} is not supported`));
    collect(req, limit, declared, refuse, (body) => {
      req.body = body;
      next();
    });
  };
}

/** Reads the body as it streams in, refusing it once past `limit`; hands the whole body to `done`. */
function collect(req: Request, limit: number, declared: number, refuse: (error: AppError) => void, done: (body: Buffer) => void): void {
  // With a declared length, chunks are copied into one buffer as they come, so the body is
  // held once (its pages become resident only as bytes arrive); otherwise they are joined.
  const into = declared > 0 ? Buffer.allocUnsafe(declared) : null;
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (error?: AppError) => {
    if (finished) return;
    finished = true;
    req.off("data", onData);
    req.off("end", onEnd);
    req.off("error", onError);
    if (error) return refuse(error);
    const joined = into && chunks.length === 0 ? into.subarray(0, size) : Buffer.concat(chunks, size);
    chunks.length = 0;
    done(joined);
  };
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size > limit) {
      req.pause();
      return finish(tooLarge(limit));
    }
    if (into && size <= into.length) {
      chunk.copy(into, size - chunk.length);
      return;
    }
    // More than was declared (Node's parser prevents it): what was copied goes first.
    if (into && chunks.length === 0) chunks.push(into.subarray(0, size - chunk.length));
    chunks.push(chunk);
  };
  const onEnd = () => finish();
  const onError = () => {
    finished = true;
  };
  req.on("data", onData);
  req.on("end", onEnd);
  req.on("error", onError);
}

/** Names the media type sent, when there is one: a header of only parameters (`; charset=utf-8`) has none. */
function notJson(contentType: string | undefined): AppError {
  const mediaType = (contentType ?? "").split(";")[0]!.trim();
  return new AppError("unsupported_media_type", `Content-Type must be application/json${mediaType ? `, not ${mediaType}` : ""}`);
}

function tooLarge(limit: number, declared?: number): AppError {
  const mib = limit / (1024 * 1024);
  return new AppError("payload_too_large", `request body${declared ? ` of ${declared} bytes` : ""} exceeds the limit of ${mib} MiB (${limit} bytes)`);
}
