// verifySignature against headers the service made (app/domain/events.py `signature`).

import assert from "node:assert/strict";
import { test } from "node:test";
import { SIGNATURE_HEADER, verifySignature } from "../src/index.js";

const SECRET = "whsec-0123456789abcdef";
const BODY = '{"id":"evt_0123","type":"board.closed","name":"Zoë"}';
const NOW = 1_800_000_000;
// What the service signs BODY with, at NOW, with SECRET.
const HEADER = `t=${NOW},v1=5c47b564edc9273c4b7d4ee7e4a9313c3e4ac51bd93adf204cff2bb930258ba8`;

test("the header name is the service's", () => {
  assert.equal(SIGNATURE_HEADER, "Leaderboard-Signature");
});

test("a body the service signed verifies, as text and as bytes", async () => {
  assert.equal(await verifySignature(SECRET, HEADER, BODY, { now: NOW }), true);
  const bytes = new TextEncoder().encode(BODY);
  assert.equal(await verifySignature(SECRET, HEADER, bytes, { now: NOW }), true);
  assert.equal(await verifySignature(SECRET, HEADER, bytes.buffer, { now: NOW + 300 }), true);
  assert.equal(await verifySignature(SECRET, `${HEADER},v1=00`, BODY, { now: NOW }), true);
});

test("another secret, another body, an old or future time, a malformed header: refused", async () => {
  const refused: Array<[string, string, string, number]> = [
    ["whsec-another-secret-0", HEADER, BODY, NOW],
    [SECRET, HEADER, `${BODY} `, NOW],
    [SECRET, HEADER, BODY, NOW + 301],
    [SECRET, HEADER, BODY, NOW - 301],
    [SECRET, `t=${NOW}`, BODY, NOW],
    [SECRET, "v1=00", BODY, NOW],
    [SECRET, "", BODY, NOW],
    [SECRET, HEADER.replace(`t=${NOW}`, "t=soon"), BODY, NOW],
    [SECRET, HEADER.replace(`t=${NOW}`, `t=${NOW + 1}`), BODY, NOW],
  ];
  for (const [secret, header, body, now] of refused) {
    assert.equal(await verifySignature(secret, header, body, { now }), false, header);
  }
});

test("the tolerance is the caller's", async () => {
  assert.equal(await verifySignature(SECRET, HEADER, BODY, { now: NOW + 600, toleranceSeconds: 600 }), true);
  assert.equal(await verifySignature(SECRET, HEADER, BODY, { now: NOW + 601, toleranceSeconds: 600 }), false);
});
