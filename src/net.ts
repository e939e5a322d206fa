import { createServer, type AddressInfo } from "node:net";
import type { IncomingMessage, Server as HttpServer, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";

/** A port free on `host` right now (the kernel picks it). */
export function findFreePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** How long what a client still sends after a refusal is read and discarded before the connection is closed. */
const LINGER_MS = 2000;

/**
 * Makes the answer to a request whose body is left unread the connection's last: it says
 * `Connection: close`, so the client sends its next request on a new connection. Node destroys
 * such a connection as soon as the answer is written, but closing a socket with unread data
 * makes TCP reset it, and the reset can overtake the answer; so instead the server closes its
 * side once the answer is out, discards what still arrives for at most LINGER_MS, and only then
 * destroys the socket (a lingering close, as nginx does).
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader("Connection", "close");
  const socket = req.socket;
  // Node calls destroySoon on the socket of an answer sent with Connection: close.
  socket.destroySoon = () => {
    socket.end();
    req.resume();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  };
}

/** The answers to a request Node's parser refused, as Node's own default gives them (lib/_http_server.js). */
function refusalOf(code: string | undefined): { status: string; message: string } {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return { status: "431 Request Header Fields Too Large", message: "the request's headers exceed the limit of 16 KB (all of them together, with the request line)" };
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { status: "413 Payload Too Large", message: "the request's chunk extensions exceed the limit" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: "408 Request Timeout", message: "the request did not arrive in time" };
    default:
      return { status: "400 Bad Request", message: "the request is not valid HTTP/1.1" };
  }
}

/**
 * Answers a request Node's HTTP parser refuses (headers past maxHeaderSize: 431; malformed: 400)
 * as Node does, but with a lingering close: Node writes its answer and destroys the socket at
 * once, and with the rest of the request still arriving the kernel resets the connection, the
 * reset overtaking the answer (a client sending a 70 KB header saw ECONNRESET, not the 431).
 * Here the server closes its side once the answer is out, and discards what still arrives for
 * at most LINGER_MS.
 */
export function answerParseErrors(http: HttpServer): void {
  const answered = new WeakSet<Duplex>();
  // Responses being written on each connection: a refusal can be written only between two.
  const writing = new WeakMap<Duplex, number>();
  http.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    writing.set(socket, (writing.get(socket) ?? 0) + 1);
    res.once("close", () => writing.set(socket, (writing.get(socket) ?? 1) - 1));
  });
  http.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    // Node answers only on a connection that never wrote a byte; a kept-alive connection whose
    // last response is done is as good (its next request is the one refused).
    if (error.code === "ECONNRESET" || !socket.writable || (writing.get(socket) ?? 0) > 0) {
      socket.destroy();
      return;
    }
    const { status, message } = refusalOf(error.code);
    const body = JSON.stringify({ error: { code: "invalid_argument", message, details: [] } });
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    socket.on("error", () => {});
    socket.resume();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  });
}
