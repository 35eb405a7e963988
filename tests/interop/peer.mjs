// A third-party Ouroboros peer for the interop tests, built on
// @harmoniclabs/ouroboros-miniprotocols-ts: its SDU encoder/decoder
// (wrapMultiplexerMessage / unwrapMultiplexerMessages), its handshake and
// keep-alive message codecs, and (in handshake_cardano.mjs) its Multiplexer and
// HandshakeClient. Helpers here only open sockets and wait for bytes.
import net from "node:net";
import {
  HandshakeAcceptVersion,
  HandshakeProposeVersion,
  HandshakeRefuse,
  KeepAliveDone,
  KeepAliveRequest,
  MiniProtocol,
  VersionData,
  keepAliveMessageFromCbor,
  unwrapMultiplexerMessages,
  wrapMultiplexerMessage,
} from "@harmoniclabs/ouroboros-miniprotocols-ts";

export const KEEP_ALIVE = 12; // DMQ's number; the package's enum has Cardano's 8
export const DMQ_N2C_V1 = 4097;
export const hex = (bytes) => Buffer.from(bytes).toString("hex");

/** "tcp:HOST:PORT" or "unix:PATH" -> net.connect options. */
export function endpoint(spec) {
  if (spec.startsWith("unix:")) return { path: spec.slice(5) };
  const [, host, port] = spec.split(":");
  return { host, port: Number(port) };
}

/** A raw socket that collects whole SDUs (decoded by the package) and notices the peer closing. */
export class RawPeer {
  static async open(spec) {
    const peer = new RawPeer(net.connect(endpoint(spec)));
    await new Promise((resolve, reject) => {
      peer.socket.once("connect", resolve);
      peer.socket.once("error", reject);
    });
    return peer;
  }

  constructor(socket) {
    this.socket = socket;
    this.buffer = Buffer.alloc(0);
    this.sdus = [];
    this.closed = false;
    this.waiters = [];
    socket.on("data", (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      while (this.buffer.length >= 8) {
        const size = 8 + this.buffer.readUInt16BE(6);
        if (this.buffer.length < size) break;
        this.sdus.push(...unwrapMultiplexerMessages(new Uint8Array(this.buffer.subarray(0, size))));
        this.buffer = this.buffer.subarray(size);
      }
      this.wake();
    });
    const onClose = () => { this.closed = true; this.wake(); };
    socket.on("end", onClose);
    socket.on("close", onClose);
    socket.on("error", onClose);
  }

  wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  async until(condition, ms, what) {
    const deadline = Date.now() + ms;
    while (!condition()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  send(frame) {
    this.socket.write(frame);
  }

  async nextSdu(protocol, ms = 5000) {
    await this.until(() => this.closed || this.sdus.some((s) => s.header.protocol === protocol), ms,
      `an SDU on mini-protocol ${protocol}`);
    const index = this.sdus.findIndex((s) => s.header.protocol === protocol);
    if (index < 0) throw new Error(`connection closed before an SDU on mini-protocol ${protocol} arrived`);
    return this.sdus.splice(index, 1)[0];
  }

  async waitClosed(ms) {
    try {
      await this.until(() => this.closed, ms, "the peer to close");
      return true;
    } catch {
      return false;
    }
  }

  destroy() {
    this.socket.destroy();
  }
}

/** DMQ N2C version data [magic, false], written by the package's VersionData encoder. */
export function dmqN2CData(magic) {
  return new VersionData(
    { networkMagic: magic, initiatorOnlyDiffusionMode: false, query: false },
    { includePeerSharing: false, includeQuery: true },
  );
}

/**
 * Propose 4097 with the package's encoder and return the decoded accept.
 *
 * The package only writes node-to-client keys as Cardano numbers (bit 15 set), so
 * the table is encoded in its node-to-node mode, which writes 4097 as is.
 */
export async function handshake(peer, magic) {
  const propose = new HandshakeProposeVersion({ versionTable: { [DMQ_N2C_V1]: dmqN2CData(magic) } }, true);
  const payload = propose.toCbor().toBuffer();
  peer.send(wrapMultiplexerMessage(payload, { protocol: MiniProtocol.Handshake, hasAgency: true }));
  const reply = await peer.nextSdu(MiniProtocol.Handshake);
  const raw = hex(reply.payload);
  let message;
  try {
    message = HandshakeAcceptVersion.fromCbor(raw, true);
  } catch {
    const refuse = HandshakeRefuse.fromCbor(raw, true);
    throw new Error(`handshake refused: ${JSON.stringify(refuse.reason)}`);
  }
  return { proposed: hex(payload), reply: raw, responderBit: reply.header.hasAgency, version: message.versionNumber,
           magic: message.versionData.networkMagic };
}

/** One keep-alive round trip on mini-protocol 12, framed and decoded by the package. */
export async function keepAlive(peer, cookie) {
  const request = new KeepAliveRequest({ cookie }).toCbor().toBuffer();
  peer.send(wrapMultiplexerMessage(request, { protocol: KEEP_ALIVE, hasAgency: true }));
  const sdu = await peer.nextSdu(KEEP_ALIVE);
  const response = keepAliveMessageFromCbor(hex(sdu.payload));
  return Number(response.cookie);
}

/** End keep-alive with MsgDone, so the server sees every protocol finished, then close. */
export async function closeCleanly(peer) {
  peer.send(wrapMultiplexerMessage(new KeepAliveDone().toCbor().toBuffer(), { protocol: KEEP_ALIVE, hasAgency: true }));
  await new Promise((resolve) => peer.socket.end(resolve));
  await peer.waitClosed(5000);
  peer.destroy();
}

export function report(result) {
  process.stdout.write(JSON.stringify(result) + "\n");
}
