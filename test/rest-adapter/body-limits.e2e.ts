import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_BODY_LIMIT_BYTES } from '../../rest-adapter/src/routes/index.js';
import { startTestStack, type TestStack } from '../support/harness.js';

describe('REST bodies bounded before they are read', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack();
  });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- beforeAll may have failed before assigning it.
  afterAll(() => stack?.stop());

  it("refuses a JSON body over the route's limit with 413 in the route's envelope, and closes the connection", async () => {
    // A valid login padded past the limit: the adapter would otherwise read and parse all of it.
    const body = JSON.stringify({
      channel: 'internet',
      userName: 'demo.user',
      password: 'Demo#Pass2026',
      padding: 'x'.repeat(JSON_BODY_LIMIT_BYTES),
    });
    const response = await stack.restFetch('/token', { method: 'PUT', headers: { 'content-type': 'application/json' }, body });
    expect(response.status).toBe(413);
    expect(response.headers.get('connection')).toBe('close');
    expect(await response.json()).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it("reads a base64 image route's larger body up to its own limit", async () => {
    const imageBase64 = Buffer.alloc(JSON_BODY_LIMIT_BYTES, 0xff).toString('base64');
    const response = await stack.restFetch('/prospect/image', {
      method: 'POST',
      headers: { 'content-type': 'application/json', token: 'not-a-token' },
      body: JSON.stringify({ documentType: 'passport', contentType: 'image/png', imageBase64 }),
    });
    // Read whole and passed on: the credential is what is refused.
    expect(response.status).toBe(401);
  });
});
