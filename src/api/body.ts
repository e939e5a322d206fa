import type { NextFunction, Request, Response } from "express";
import { AppError } from "../app/errors.js";
import { parseJsonBody } from "../formats/json.js";

/**
 * Reads a JSON request body of at most `limit` bytes. An oversized body is refused as soon as
 * it is known to be too large (from Content-Length, or while streaming) without reading the
 * rest: the answer is sent and the connection closed. (body-parser drains the whole body
 * before answering, which lets a client hold the server with an endless body.)
 */
export function jsonBody(limit: number) {
  return (req: Request, res: Response, next: NextFunction) => {
    const refuse = (error: AppError) => {
      // The answer goes out at once. Closing a socket with unread data makes TCP reset it, and
      // the reset can overtake the answer, so what still arrives is discarded for at most two
      // seconds (a lingering close, as nginx does) before the connection is closed.
      res.on("finish", () => {
        req.resume();
        setTimeout(() => req.socket.destroy(), 2000).unref();
      });
      next(error);
    };
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > limit) return refuse(tooLarge(limit, declared));
    const type = req.headers["content-type"];
    if (!type || !req.is("application/json")) {
      return refuse(new AppError("unsupported_media_type", `Content-Type must be application/json${type ? `, not ${type.split(";")[0]}` : ""}`));
    }
    const charset = /charset=([^;]+)/i.exec(type)?.[1]?.trim().replace(/"/g, "").toLowerCase();
    if (charset && charset !== "utf-8" && charset !== "utf8") return refuse(new AppError("unsupported_media_type", `charset must be utf-8, not ${charset}`));
    const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding !== "identity") return refuse(new AppError("unsupported_media_type", `Content-Encoding ${encoding} is not supported`));

    // With a declared length, chunks are copied into one buffer as they come, so the body is
    // held once (its pages become resident only as bytes arrive); otherwise they are joined.
    const into = declared > 0 ? Buffer.allocUnsafe(declared) : null;
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (error?: AppError) => {
      if (done) return;
      done = true;
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      if (error) return refuse(error);
      const joined = into && chunks.length === 0 ? into.subarray(0, size) : Buffer.concat(chunks, size);
      chunks.length = 0;
      try {
        req.body = parseJsonBody(joined);
      } catch (parseError) {
        return next(new AppError("invalid_argument", `malformed JSON: ${(parseError as Error).message}`, [{ path: "(body)", message: "is not valid JSON" }]));
      }
      next();
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
      done = true;
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  };
}

function tooLarge(limit: number, declared?: number): AppError {
  const mib = limit / (1024 * 1024);
  return new AppError("payload_too_large", `request body${declared ? ` of ${declared} bytes` : ""} exceeds the limit of ${mib} MiB (${limit} bytes)`);
}
