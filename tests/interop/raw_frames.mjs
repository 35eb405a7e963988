// Send one malformed frame, built with the package's SDU encoder, on a connection
// that has completed its handshake, while a second connection stays open; then check
// that the first is closed by the server and that the second, and a new one, still work.
// Usage: node raw_frames.mjs ENDPOINT MAGIC CASE
import { KeepAliveRequest, MiniProtocol, wrapMultiplexerMessage } from "@harmoniclabs/ouroboros-miniprotocols-ts";
import { KEEP_ALIVE, RawPeer, closeCleanly, handshake, hex, keepAlive, report } from "./peer.mjs";

const [spec, magicArg, badCase] = process.argv.slice(2);
const magic = Number(magicArg);
const keepAliveBytes = (cookie) => new KeepAliveRequest({ cookie }).toCbor().toBuffer();

function badFrame(name) {
  switch (name) {
    case "wrong-direction":
      // hasAgency false sets the M bit: a responder's keep-alive sent to our responder.
      return wrapMultiplexerMessage(keepAliveBytes(7), { protocol: KEEP_ALIVE, hasAgency: false });
    case "unknown-protocol":
      // The package's own chain-sync number: never registered on a DMQ connection.
      return wrapMultiplexerMessage(keepAliveBytes(7), { protocol: MiniProtocol.ChainSync, hasAgency: true });
    case "zero-length":
      return wrapMultiplexerMessage(new Uint8Array(0), { protocol: KEEP_ALIVE, hasAgency: true });
    case "ingress-overrun": {
      // 300 keep-alive requests in one SDU: 1500 bytes against an ingress limit of 1408.
      const flood = Buffer.concat(Array.from({ length: 300 }, (_, i) => Buffer.from(keepAliveBytes(1000 + i))));
      return wrapMultiplexerMessage(flood, { protocol: KEEP_ALIVE, hasAgency: true });
    }
    default:
      throw new Error(`unknown case ${name}`);
  }
}

const bystander = await RawPeer.open(spec);
const bystanderHandshake = await handshake(bystander, magic);
const cookies = [await keepAlive(bystander, 1)];

const offender = await RawPeer.open(spec);
const offenderHandshake = await handshake(offender, magic);
const frame = badFrame(badCase);
offender.send(frame);
const offenderClosed = await offender.waitClosed(5000);
offender.destroy();

cookies.push(await keepAlive(bystander, 2));
const fresh = await RawPeer.open(spec);
const freshHandshake = await handshake(fresh, magic);
cookies.push(await keepAlive(fresh, 3));
await closeCleanly(bystander);
await closeCleanly(fresh);

report({
  case: badCase,
  frameHeader: hex(frame.subarray(4, 8)),
  frameLength: frame.length,
  handshakes: [bystanderHandshake, offenderHandshake, freshHandshake],
  offenderClosed,
  cookies,
});
