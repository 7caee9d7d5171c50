// Checking a webhook delivery's Leaderboard-Signature header, as the service makes it:
// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the webhook's secret>. Web Crypto
// only (Node 20+, Deno, Bun, workers), so it is async. Check the body's raw bytes before parsing
// them, then drop an event whose id was seen already: delivery is at least once.

export const SIGNATURE_HEADER = "Leaderboard-Signature";
export const EVENT_ID_HEADER = "Leaderboard-Event-Id";
export const DEFAULT_TOLERANCE_SECONDS = 300;

export interface VerifyOptions {
  /** How far the signed time may be from `now`, either way (default 300). */
  toleranceSeconds?: number;
  /** Now, in unix seconds (default: the clock's). */
  now?: number;
}

const encoder = new TextEncoder();

function bytesOf(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === "string") return encoder.encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Equal strings, in time that does not depend on where they differ. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let differ = 0;
  for (let i = 0; i < a.length; i++) differ |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return differ === 0;
}

/**
 * Whether `header` signs `body` with `secret` at a time within `toleranceSeconds` of `now`:
 * what the service's own check says (app/domain/events.py `verify`). An old time is refused
 * too, so a recorded delivery replayed later fails.
 */
export async function verifySignature(
  secret: string,
  header: string,
  body: string | Uint8Array | ArrayBuffer,
  options: VerifyOptions = {},
): Promise<boolean> {
  const fields = new Map<string, string[]>();
  for (const part of header.split(",")) {
    const trimmed = part.trim();
    const at = trimmed.indexOf("=");
    const name = at < 0 ? trimmed : trimmed.slice(0, at);
    const value = at < 0 ? "" : trimmed.slice(at + 1);
    fields.set(name, [...(fields.get(name) ?? []), value]);
  }
  const t = fields.get("t")?.[0]?.trim() ?? "";
  if (!/^[+-]?\d+$/.test(t)) return false;
  const timestamp = Number.parseInt(t, 10);
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - timestamp) > tolerance) return false;
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const raw = bytesOf(body);
  const signed = new Uint8Array(encoder.encode(`${timestamp}.`).length + raw.length);
  signed.set(encoder.encode(`${timestamp}.`));
  signed.set(raw, signed.length - raw.length);
  const expected = hex(await crypto.subtle.sign("HMAC", key, signed));
  return (fields.get("v1") ?? []).some((given) => sameText(expected, given));
}
