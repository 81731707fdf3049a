import { GridFSBucket } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO } from '../../platform/domain/demo.js';
import { deviceCryptotext } from '../../subgraphs/user/src/auth/device-proof.js';
import { authCollections } from '../../subgraphs/user/src/auth/datasource.js';
import { usersCollection } from '../../subgraphs/user/src/profile/datasource.js';
import { prospectCollections } from '../../subgraphs/user/src/onboarding/datasource.js';
import { startInbox, type Inbox } from '../support/inbox.js';
import { startTestStack, type TestStack } from '../support/harness.js';

interface ErrorBody {
  success: false;
  error: { code: string; message: string; field?: string };
}
interface ProspectBody {
  success: boolean;
  prospectId: string;
  segment: string;
  token: string;
  dtsExpiry: string;
}
interface RegistrationBody {
  success: boolean;
  SvcUserId: string;
  userId: string;
  deviceTag: string;
  channel: string;
  serverSecret: string;
  deviceId?: string;
  isRecovery: boolean;
  token: string;
}

// The smallest valid PNG and JPEG headers are enough for the content check.
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 1)]).toString('base64');
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 2)]).toString('base64');

describe('prospects, device registration and recovery', () => {
  let stack: TestStack;
  let inbox: Inbox;
  let counter = 0;
  const tag = () => `test-device-${Date.now()}-${(counter += 1)}`;
  const prospect = async (deviceTag: string, extra: Record<string, unknown> = {}) => {
    const response = await stack.rest<ProspectBody>('POST', '/prospect/data', {
      body: { deviceTag, preSegment: 'retail', firstName: 'Pat', lastName: 'Prospect', email: 'pat@example.com', ...extra },
    });
    expect(response.status).toBe(200);
    return response.body;
  };

  beforeAll(async () => {
    inbox = await startInbox();
    stack = await startTestStack({
      SMTP_URL: inbox.smtpUrl,
      SMS_WEBHOOK_URL: inbox.smsWebhookUrl,
      LOCK_PERIOD_SECONDS: '2',
      OPERATOR_EMAIL: 'ops@bank.example',
      TRUST_PROXY: 'true',
    });
  });
  afterAll(async () => {
    await stack.stop();
    await inbox.close();
  });

  it('records prospect data and gives the prospect a token for the next steps', async () => {
    const body = await prospect(tag());
    expect(body).toMatchObject({ success: true, segment: 'retail' });
    expect(body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it.each([
    ['without deviceTag', { preSegment: 'retail' }, 'deviceTag'],
    ['without preSegment', { deviceTag: 'd1' }, 'preSegment'],
    ['with a preSegment that leads to no segment', { deviceTag: 'd1', preSegment: 'astronaut' }, 'preSegment'],
    ['with a bad email', { deviceTag: 'd1', preSegment: 'retail', email: 'x' }, 'email'],
  ])('refuses prospect data %s with 404', async (_name, body, field) => {
    const response = await stack.rest<ErrorBody>('POST', '/prospect/data', { body });
    expect(response.status).toBe(404);
    expect(response.body.error.field).toBe(field);
  });

  it('stores a document image in GridFS after checking its type by content and its size', async () => {
    const { token } = await prospect(tag());
    const ok = await stack.rest<{ imageId: string; size: number }>('POST', '/prospect/image', {
      headers: { token },
      body: { documentType: 'idFront', contentType: 'image/png', imageBase64: PNG },
    });
    expect(ok.status).toBe(200);
    const files = await new GridFSBucket(stack.mongo.db('user'), { bucketName: 'prospectImages' })
      .find({ _id: ok.body.imageId as never })
      .toArray();
    expect(files[0]?.length).toBe(ok.body.size);
    expect(files[0]?.metadata).toMatchObject({ documentType: 'idFront', contentType: 'image/png' });

    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ documentType: 'idFront', contentType: 'image/png' }, 404, 'REQUIRED_ELEMENT_MISSING'],
      [{ documentType: 'idFront', contentType: 'image/gif', imageBase64: PNG }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      [{ documentType: 'idFront', contentType: 'image/png', imageBase64: JPEG }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      [
        { documentType: 'idFront', contentType: 'image/jpeg', imageBase64: Buffer.alloc(2 * 1024 * 1024 + 10, 0xff).toString('base64') },
        413,
        'PAYLOAD_TOO_LARGE',
      ],
      [{ documentType: 'tattoo', contentType: 'image/png', imageBase64: PNG }, 400, 'VALIDATION_FAILED'],
    ];
    for (const [body, status, code] of cases) {
      const response = await stack.rest<ErrorBody>('POST', '/prospect/image', { headers: { token }, body });
      expect({ status: response.status, code: response.body.error.code }).toEqual({ status, code });
    }
    expect(await stack.mongo.db('user').collection('prospectImages.files').countDocuments()).toBe(1);
  });

  it('turns a prospect into a user with a new device, records the referral without a task yet, and the device then logs in with its secret', async () => {
    const deviceTag = tag();
    const { token } = await prospect(deviceTag);
    const response = await stack.rest<RegistrationBody>('POST', '/prospect/registration', {
      headers: { token, 'x-forwarded-for': '203.0.113.7' },
      body: { deviceTag, preSegment: 'retail', deviceData: { channel: 'mobile', model: 'Test phone' }, referral: 'DANA2026' },
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: true, deviceTag, channel: 'mobile', isRecovery: false });
    expect(response.body.SvcUserId).toMatch(/^usr_[0-9a-f]{24}$/);
    const user = await usersCollection(stack.mongo.db('user')).findOne({ _id: response.body.SvcUserId });
    expect(user).toMatchObject({ isIdleUser: false, isActive: true, segment: 'retail', firstName: 'Pat' });
    const device = await authCollections(stack.mongo.db('user')).devices.findOne({ _id: deviceTag });
    expect(device).toMatchObject({ SvcUserId: response.body.SvcUserId, channels: ['mobile'], ipAddress: '203.0.113.7' });
    // The bonus task waits for the new user's confirmed email and mobile (see the referral tests below).
    const { referralTasks, referralClaims } = prospectCollections(stack.mongo.db('user'));
    expect(await referralTasks.findOne({ referredSvcUserId: response.body.SvcUserId })).toBeNull();
    expect(await referralClaims.findOne({ _id: response.body.SvcUserId })).toMatchObject({
      referrerSvcUserId: DEMO.userId,
      referralCode: 'DANA2026',
    });

    // The prospect token is spent; the new device logs in with the secret it was given.
    const reuse = await stack.rest<ErrorBody>('POST', '/prospect/image', {
      headers: { token },
      body: { documentType: 'selfie', contentType: 'image/png', imageBase64: PNG },
    });
    expect(reuse.status).toBe(401);
    const dtsValueString = new Date().toISOString();
    const login = await stack.rest<{ SvcUserId: string }>('PUT', '/token', {
      body: {
        channel: 'mobile',
        deviceTag,
        dtsValueString,
        cryptotext: deviceCryptotext(response.body.serverSecret, 'mobile', deviceTag, dtsValueString),
      },
    });
    expect(login.status).toBe(200);
    expect(login.body.SvcUserId).toBe(response.body.SvcUserId);
  });

  describe('referral bonuses', () => {
    let line = 0;
    /** A fresh mobile number for each call (the stack's database is new). */
    const mobile = () => `+1312555${String((line += 1)).padStart(4, '0')}`;
    const tasksFor = (SvcUserId: string) =>
      prospectCollections(stack.mongo.db('user')).referralTasks.find({ referredSvcUserId: SvcUserId }).toArray();
    /** Registers a referred prospect with DANA2026; nothing is confirmed yet. */
    const referred = async (email: string, phone: string, deviceData: Record<string, unknown> = { channel: 'mobile' }) => {
      const deviceTag = tag();
      const { token } = await prospect(deviceTag, { email, mobile: phone });
      const response = await stack.rest<RegistrationBody>('POST', '/prospect/registration', {
        headers: { token },
        body: { deviceTag, preSegment: 'retail', deviceData, referral: 'DANA2026' },
      });
      expect(response.status).toBe(200);
      return response.body;
    };
    /** Asks for a code to the user's own email or mobile and returns it. */
    const codeFor = async (user: RegistrationBody, kind: 'email' | 'mobile', to: string) => {
      const sent = await stack.rest('POST', '/user', { headers: { token: user.token }, body: { [kind]: to } });
      expect(sent.status).toBe(200);
      return inbox.codeFor(to, kind === 'email' ? 'email' : 'sms');
    };
    const confirm = (user: RegistrationBody, kind: 'email' | 'mobile', code: string) =>
      stack.rest('GET', `/confirm/${kind}/${user.SvcUserId}/${code}`, { headers: { token: user.token } });
    const confirmBoth = async (user: RegistrationBody, email: string, phone: string) => {
      expect((await confirm(user, 'email', await codeFor(user, 'email', email))).status).toBe(200);
      expect((await confirm(user, 'mobile', await codeFor(user, 'mobile', phone))).status).toBe(200);
    };

    it('creates the task only once the referred user confirmed both email and mobile, and never for one who does not', async () => {
      const phone = mobile();
      const verified = await referred('ref.verified@example.com', phone);
      const unverified = await referred('ref.unverified@example.com', mobile());
      expect(await tasksFor(verified.SvcUserId)).toEqual([]);
      expect((await confirm(verified, 'email', await codeFor(verified, 'email', 'ref.verified@example.com'))).status).toBe(200);
      expect(await tasksFor(verified.SvcUserId)).toEqual([]);
      expect((await confirm(verified, 'mobile', await codeFor(verified, 'mobile', phone))).status).toBe(200);
      expect(await tasksFor(verified.SvcUserId)).toEqual([
        expect.objectContaining({ referrerSvcUserId: DEMO.userId, referralCode: 'DANA2026', status: 'pending' }),
      ]);
      // Confirming only the email is not enough.
      expect((await confirm(unverified, 'email', await codeFor(unverified, 'email', 'ref.unverified@example.com'))).status).toBe(200);
      expect(await tasksFor(unverified.SvcUserId)).toEqual([]);
    });

    it('pays at most once per person: the same mailbox (a +tag included), the same mobile line or the same device refers nobody again', async () => {
      const phone = mobile();
      const first = await referred('ref.once@example.com', phone, { channel: 'android', uuid: 'aaaaaaaa-bbbb-cccc-dddd-000000000001' });
      await confirmBoth(first, 'ref.once@example.com', phone);
      expect(await tasksFor(first.SvcUserId)).toHaveLength(1);

      const sameMailbox = await referred('ref.once+2@example.com', mobile());
      const sameLine = await referred('ref.once.line@example.com', phone);
      const sameDevice = await referred('ref.once.device@example.com', mobile(), {
        channel: 'android',
        uuid: 'AAAAAAAA-BBBB-CCCC-DDDD-000000000001',
      });
      for (const [user, email] of [
        [sameMailbox, 'ref.once+2@example.com'],
        [sameLine, 'ref.once.line@example.com'],
        [sameDevice, 'ref.once.device@example.com'],
      ] as const) {
        const users = await usersCollection(stack.mongo.db('user')).findOne({ _id: user.SvcUserId });
        await confirmBoth(user, email, users!.mobile!);
        expect(await tasksFor(user.SvcUserId)).toEqual([]);
      }
      expect(
        await prospectCollections(stack.mongo.db('user')).referralTasks.countDocuments({
          referredSvcUserId: { $in: [first.SvcUserId, sameMailbox.SvcUserId, sameLine.SvcUserId, sameDevice.SvcUserId] },
        }),
      ).toBe(1);
    });

    it('creates one task when two registrations of one person confirm at once', async () => {
      const phone = mobile();
      const a = await referred('ref.race@example.com', phone);
      const b = await referred('ref.race@example.com', phone);
      for (const user of [a, b])
        expect((await confirm(user, 'email', await codeFor(user, 'email', 'ref.race@example.com'))).status).toBe(200);
      const codeA = await codeFor(a, 'mobile', phone);
      const codeB = await codeFor(b, 'mobile', phone);
      const answers = await Promise.all([confirm(a, 'mobile', codeA), confirm(b, 'mobile', codeB)]);
      expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
      const tasks = [...(await tasksFor(a.SvcUserId)), ...(await tasksFor(b.SvcUserId))];
      expect(tasks).toHaveLength(1);
    });

    it("creates none for a referral of oneself: the referrer's own email or mobile", async () => {
      const ownEmail = await referred('dana.demo@example.com', mobile());
      const ownLine = await referred('ref.self@example.com', '+12125550101');
      for (const [user, email] of [
        [ownEmail, 'dana.demo@example.com'],
        [ownLine, 'ref.self@example.com'],
      ] as const) {
        const users = await usersCollection(stack.mongo.db('user')).findOne({ _id: user.SvcUserId });
        await confirmBoth(user, email, users!.mobile!);
        expect(await tasksFor(user.SvcUserId)).toEqual([]);
      }
    });
  });

  it('refuses a registration that lacks deviceData with 401 and locks the prospect for the set period', async () => {
    const deviceTag = tag();
    const { token } = await prospect(deviceTag);
    const missing = await stack.rest<ErrorBody>('POST', '/prospect/registration', {
      headers: { token },
      body: { deviceTag, preSegment: 'retail' },
    });
    expect(missing.status).toBe(401);
    expect(missing.body.error.field).toBe('deviceData');
    const locked = await stack.rest<ErrorBody>('POST', '/prospect/registration', {
      headers: { token },
      body: { deviceTag, preSegment: 'retail', deviceData: {} },
    });
    expect(locked.status).toBe(401);
    expect(locked.body.error.code).toBe('ACTOR_LOCKED');
    await new Promise((resolve) => setTimeout(resolve, 2200));
    const after = await stack.rest('POST', '/prospect/registration', {
      headers: { token },
      body: { deviceTag, preSegment: 'retail', deviceData: {} },
    });
    expect(after.status).toBe(200);
  });

  it('refuses an unknown preSegment and an unknown referral code with 400, creating no user', async () => {
    const deviceTag = tag();
    const { token } = await prospect(deviceTag);
    const users = () => usersCollection(stack.mongo.db('user')).countDocuments();
    const before = await users();
    const unknown = await stack.rest<ErrorBody>('POST', '/prospect/registration', {
      headers: { token },
      body: { deviceTag, preSegment: 'astronaut', deviceData: {} },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.field).toBe('preSegment');
    const referral = await stack.rest<ErrorBody>('POST', '/prospect/registration', {
      headers: { token },
      body: { deviceTag, preSegment: 'retail', deviceData: {}, referral: 'NOBODY' },
    });
    expect(referral.status).toBe(400);
    expect(referral.body.error.field).toBe('referral');
    expect(await users()).toBe(before);
  });

  it('registers a browser device with a deviceId shown once', async () => {
    const deviceTag = tag();
    const { token } = await prospect(deviceTag);
    const response = await stack.rest<RegistrationBody>('POST', '/prospect/registration', {
      headers: { token },
      body: { deviceTag, preSegment: 'student', deviceData: { channel: 'browser' } },
    });
    expect(response.status).toBe(200);
    expect(response.body.deviceId).toBeDefined();
    const login = await stack.rest('PUT', '/token', { body: { channel: 'browser', deviceId: response.body.deviceId } });
    expect(login.status).toBe(200);
  });

  it('recovers an existing user onto a new device with a code sent by email', async () => {
    const userToken = await stack.loginDemo();
    const deviceTag = tag();
    const existing = await stack.rest<ErrorBody>('POST', '/recovery/code', {
      headers: { token: userToken },
      body: { deviceTag: DEMO.devices.mobile.deviceTag },
    });
    expect(existing.status).toBe(404);
    const sent = await stack.rest<{ success: boolean; sentTo: string }>('POST', '/recovery/code', {
      headers: { token: userToken },
      body: { deviceTag },
    });
    expect(sent.status).toBe(200);
    expect(sent.body.sentTo).toBe('d***@example.com');
    const code = await inbox.codeFor('dana.demo@example.com', 'email');
    const wrong = await stack.rest<ErrorBody>('POST', '/prospect/registration', {
      headers: { token: userToken },
      body: { deviceTag, preSegment: 'recovery', deviceData: { channel: 'ios_v1', recoveryCode: code === '000000' ? '111111' : '000000' } },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe('CODE_INVALID');
    const ok = await stack.rest<RegistrationBody>('POST', '/prospect/registration', {
      headers: { token: userToken },
      body: { deviceTag, preSegment: 'recovery', deviceData: { channel: 'ios_v1', recoveryCode: code } },
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ SvcUserId: DEMO.userId, isRecovery: true, channel: 'ios_v1' });
    const device = await authCollections(stack.mongo.db('user')).devices.findOne({ _id: deviceTag });
    expect(device?.deviceData).toEqual({ channel: 'ios_v1' });
  });

  it('refuses recovery without a user token, and recovery of a hardened user with 404, telling the operator', async () => {
    const deviceTag = tag();
    const { token } = await prospect(deviceTag);
    const noUser = await stack.rest<ErrorBody>('POST', '/prospect/registration', {
      headers: { token },
      body: { deviceTag, preSegment: 'recovery', deviceData: {} },
    });
    expect(noUser.status).toBe(400);

    await usersCollection(stack.mongo.db('user')).updateOne({ _id: DEMO.userId }, { $set: { isHardened: true } });
    try {
      const userToken = await stack.loginDemo();
      const hardened = await stack.rest<ErrorBody>('POST', '/prospect/registration', {
        headers: { token: userToken },
        body: { deviceTag: tag(), preSegment: 'recovery', deviceData: { recoveryCode: '123456' } },
      });
      expect(hardened.status).toBe(404);
      expect(hardened.body.error.code).toBe('RECOVERY_REFUSED');
      expect(inbox.emails.some((mail) => mail.to === 'ops@bank.example')).toBe(true);
    } finally {
      await usersCollection(stack.mongo.db('user')).updateOne({ _id: DEMO.userId }, { $set: { isHardened: false } });
    }
  });

  it('records an onboarding socket request, and refuses one with too few parameters with 404', async () => {
    const deviceTag = tag();
    const { token } = await prospect(deviceTag);
    const ok = await stack.rest<{ success: boolean; socketRequestId: string }>('POST', '/prospect/connectsocket', {
      headers: { token },
      body: { deviceTag, socketId: 'sock-1' },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.socketRequestId).toMatch(/^sock_/);
    const few = await stack.rest<ErrorBody>('POST', '/prospect/connectsocket', { headers: { token }, body: { deviceTag } });
    expect(few.status).toBe(404);
    expect(few.body.error.field).toBe('socketId');
  });

  it("does not let someone who knows a device tag take over that device's onboarding", async () => {
    const deviceTag = tag();
    const victim = await prospect(deviceTag, { email: 'victim@example.com' });
    const attacker = await prospect(deviceTag, { email: 'attacker@example.com' });
    expect(attacker.prospectId).not.toBe(victim.prospectId);
    const registered = await stack.rest<RegistrationBody>('POST', '/prospect/registration', {
      headers: { token: victim.token },
      body: { deviceTag, preSegment: 'retail', deviceData: {} },
    });
    expect(registered.status).toBe(200);
    const user = await usersCollection(stack.mongo.db('user')).findOne({ _id: registered.body.SvcUserId });
    expect(user?.email).toBe('victim@example.com');
    const late = await stack.rest<ErrorBody>('POST', '/prospect/registration', {
      headers: { token: attacker.token },
      body: { deviceTag, preSegment: 'retail', deviceData: {} },
    });
    expect(late.status).toBe(409);
  });

  it('updates a prospect only with its own token, replacing the token', async () => {
    const deviceTag = tag();
    const first = await prospect(deviceTag);
    const update = await stack.rest<ProspectBody>('POST', '/prospect/data', {
      headers: { token: first.token },
      body: { deviceTag, preSegment: 'student', firstName: 'Sam' },
    });
    expect(update.status).toBe(200);
    expect(update.body).toMatchObject({ prospectId: first.prospectId, segment: 'student' });
    const old = await stack.rest('POST', '/prospect/connectsocket', {
      headers: { token: first.token },
      body: { deviceTag, socketId: 's' },
    });
    expect(old.status).toBe(401);
  });

  it('records the socket address, not a client-written x-forwarded-for that is no IP address', async () => {
    const deviceTag = tag();
    const { token } = await prospect(deviceTag);
    const response = await stack.rest<RegistrationBody>('POST', '/prospect/registration', {
      headers: { token, 'x-forwarded-for': 'not-an-ip<script>' },
      body: { deviceTag, preSegment: 'retail', deviceData: {} },
    });
    expect(response.status).toBe(200);
    const device = await authCollections(stack.mongo.db('user')).devices.findOne({ _id: deviceTag });
    expect(device?.ipAddress).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
  });

  it('never logs a device secret, a deviceId or a token it issued', async () => {
    const deviceTag = tag();
    const { token } = await prospect(deviceTag);
    const response = await stack.rest<RegistrationBody>('POST', '/prospect/registration', {
      headers: { token },
      body: { deviceTag, preSegment: 'retail', deviceData: { channel: 'browser' } },
    });
    const text = JSON.stringify(stack.logs);
    for (const secret of [response.body.serverSecret, response.body.deviceId!, response.body.token, token]) {
      expect(secret).toBeTruthy();
      expect(text).not.toContain(secret);
    }
  });
});
