import { createServer, type AddressInfo } from "node:net";
import type { IncomingMessage, ServerResponse } from "node:http";

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
