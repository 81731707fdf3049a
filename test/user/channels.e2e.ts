import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { androidSignature, deviceCryptotext } from '../../subgraphs/user/src/auth/device-proof.js';
import { startTestStack, type TestStack } from '../support/harness.js';

interface LoginBody {
  success: boolean;
  SvcUserId: string;
  token: string;
  isLocalSavingAllowed: boolean;
}
interface ErrorBody {
  success: false;
  error: { code: string; message: string; field?: string };
}

const SERVICE_KEY = 'statement-service-key-0123456789abcdef';
const secret = DEMO.deviceSecret;

function cryptotextLogin(channel: 'android_v1' | 'ios_v1' | 'mobile', deviceTag: string, at = new Date(), key: string = secret) {
  const dtsValueString = at.toISOString();
  return { channel, deviceTag, dtsValueString, cryptotext: deviceCryptotext(key, channel, deviceTag, dtsValueString) };
}

function androidLogin(atMs = Date.now(), uuid: string = DEMO.devices.android.uuid, key: string = secret) {
  const { deviceTag } = DEMO.devices.android;
  return {
    channel: 'android',
    uuid,
    deviceTagOpen: deviceTag,
    signature: androidSignature(key, uuid, deviceTag, atMs),
    specifics: { os: 'android 15' },
  };
}

describe('the device and service login channels', () => {
  let stack: TestStack;
  const login = (body: unknown, headers: Record<string, string> = {}) =>
    stack.rest<LoginBody & ErrorBody>('PUT', '/token', { body, headers });

  beforeAll(async () => {
    stack = await startTestStack({
      SERVICE_KEYS: `statements=${SERVICE_KEY}`,
      SERVICE_KEY_SCOPES: JSON.stringify({ statements: { channels: ['statementGenerator', 'dicBuilder', 'chat'], users: '*' } }),
      DEVICE_PROOF_WINDOW_SECONDS: '60',
      LOGIN_MAX_FAILURES: '3',
      LOCK_PERIOD_SECONDS: '2',
    });
  });
  afterAll(async () => {
    await stack.stop();
  });

  it.each(['android_v1', 'ios_v1', 'mobile'] as const)('logs in over %s with a cryptotext made from the device secret', async (channel) => {
    const response = await login(cryptotextLogin(channel, DEMO.devices[channel].deviceTag));
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: true, SvcUserId: DEMO.userId, isLocalSavingAllowed: true });
  });

  it('refuses a replayed cryptotext, and one made with another secret', async () => {
    const body = cryptotextLogin('mobile', DEMO.devices.mobile.deviceTag, new Date(Date.now() + 1000));
    expect((await login(body)).status).toBe(200);
    const replay = await login(body);
    expect(replay.status).toBe(401);
    expect(replay.body.error.code).toBe('UNAUTHENTICATED');
    const forged = await login(cryptotextLogin('mobile', DEMO.devices.mobile.deviceTag, new Date(Date.now() + 2000), 'another-secret'));
    expect(forged.status).toBe(401);
  });

  it('refuses a time stamp outside the window, and a device registered for another channel', async () => {
    const stale = await login(cryptotextLogin('ios_v1', DEMO.devices.ios_v1.deviceTag, new Date(Date.now() - 120_000)));
    expect(stale.status).toBe(401);
    expect(stale.body.error.code).toBe('UNAUTHENTICATED');
    const wrongChannel = await login(cryptotextLogin('ios_v1', DEMO.devices.mobile.deviceTag));
    expect(wrongChannel.status).toBe(401);
  });

  it('requires dtsValueString and cryptotext on the cryptotext channels', async () => {
    const noCryptotext = await login({ channel: 'android_v1', deviceTag: 'x', dtsValueString: new Date().toISOString() });
    expect(noCryptotext.status).toBe(401);
    expect(noCryptotext.body.error).toMatchObject({ code: 'CHANNEL_PROPERTY_MISSING', field: 'cryptotext' });
    const noDts = await login({ channel: 'ios_v1', deviceTag: 'x', cryptotext: 'y' });
    expect(noDts.body.error).toMatchObject({ code: 'CHANNEL_PROPERTY_MISSING', field: 'dtsValueString' });
  });

  it('logs in over android with a signature, and refuses a replay, a wrong uuid and a malformed uuid', async () => {
    const body = androidLogin();
    const ok = await login(body);
    expect(ok.status).toBe(200);
    expect(ok.body.SvcUserId).toBe(DEMO.userId);
    expect((await login(body)).status).toBe(401);
    const otherUuid = await login(androidLogin(Date.now() + 1000, '00000000-0000-4000-8000-000000000000'));
    expect(otherUuid.status).toBe(401);
    const short = await login({ ...androidLogin(Date.now() + 2000), uuid: 'too-short' });
    expect(short.status).toBe(401);
    expect(short.body.error).toMatchObject({ code: 'CHANNEL_PROPERTY_MISSING', field: 'uuid' });
  });

  it('logs in over browser with the registered deviceId only', async () => {
    const ok = await login({ channel: 'browser', deviceId: DEMO.devices.browser.deviceId });
    expect(ok.status).toBe(200);
    expect(ok.body.isLocalSavingAllowed).toBe(false);
    expect((await login({ channel: 'browser', deviceId: 'not-a-registered-browser' })).status).toBe(401);
  });

  it('accepts the service channels only with a service key', async () => {
    for (const channel of ['statementGenerator', 'dicBuilder']) {
      const refused = await login({ channel, userId: DEMO.userId });
      expect(refused.status).toBe(404);
      expect(refused.body.error.code).toBe('CHANNEL_NOT_PERMITTED');
      const ok = await login({ channel, userId: DEMO.userId }, { 'x-service-key': SERVICE_KEY });
      expect(ok.status).toBe(200);
      expect(ok.body.SvcUserId).toBe(DEMO.userId);
    }
    const unknownUser = await login({ channel: 'dicBuilder', userId: 'no_such_user' }, { 'x-service-key': SERVICE_KEY });
    expect(unknownUser.status).toBe(401);
    const badKey = await login({ channel: 'dicBuilder', userId: DEMO.userId }, { 'x-service-key': 'x'.repeat(40) });
    expect(badKey.status).toBe(401);
  });

  it('logs in over chat for a linked transport identity, through a service', async () => {
    const body = { channel: 'chat', transport: DEMO.chat.transport, transportUserId: DEMO.chat.transportUserId };
    expect((await login(body)).status).toBe(404);
    expect((await login(body, { 'x-service-key': SERVICE_KEY })).status).toBe(200);
    expect((await login({ ...body, transportUserId: '999' }, { 'x-service-key': SERVICE_KEY })).status).toBe(401);
    const missing = await login({ channel: 'chat', transport: 'whatsapp' }, { 'x-service-key': SERVICE_KEY });
    expect(missing.body.error).toMatchObject({ code: 'CHANNEL_PROPERTY_MISSING', field: 'transportUserId' });
  });

  it('locks a device after repeated bad proofs, and lets it in once the period passes', async () => {
    const tag = DEMO.devices.android_v1.deviceTag;
    for (let i = 0; i < 3; i += 1) {
      expect((await login(cryptotextLogin('android_v1', tag, new Date(), 'wrong-secret'))).status).toBe(401);
    }
    const locked = await login(cryptotextLogin('android_v1', tag, new Date(Date.now() + 500)));
    expect(locked.status).toBe(401);
    expect(locked.body.error.code).toBe('ACTOR_LOCKED');
    await new Promise((resolve) => setTimeout(resolve, 2200));
    expect((await login(cryptotextLogin('android_v1', tag, new Date(Date.now() + 1000)))).status).toBe(200);
  });

  it('accepts one of two racing copies of the same proof, never both', async () => {
    const body = cryptotextLogin('mobile', DEMO.devices.mobile.deviceTag, new Date(Date.now() + 5000));
    const answers = await Promise.all([login(body), login(body), login(body)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401]);
  });

  it('lets no more than the allowed number of guesses through when they arrive in parallel', async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => login({ channel: 'internet', userName: 'parallel.guesser', password: 'wrong' })),
    );
    const codes = answers.map((a) => a.body.error.code);
    // LOGIN_MAX_FAILURES is 3: three passwords are checked, every other attempt is refused unchecked.
    expect(codes.filter((c) => c === 'UNAUTHENTICATED')).toHaveLength(3);
    expect(codes.filter((c) => c === 'ACTOR_LOCKED')).toHaveLength(17);
  });

  it('never logs a device secret, a signature or a cryptotext', () => {
    const text = JSON.stringify(stack.logs);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(DEMO.devices.browser.deviceId);
  });
});
