import { randomInt } from 'node:crypto';
import { GridFSBucket, MongoServerError, type Collection, type Db } from 'mongodb';
import type { ServiceConfig } from '../../../../platform/runtime/config-slices.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { detectFileType, storeFile, type FileType } from '../../../../platform/mongo/files.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { maskRecipient, type Notifier } from '../../../../platform/messaging/notify.js';
import type { Principal } from '../../../../platform/contracts/principal.js';
import { newId, sha256 } from '../../../../platform/security/secrets.js';
import { checkString, DEVICE_TAG_RULE, EMAIL_RULE, PHONE_RULE, required } from '../../../../platform/security/validate.js';
import { newDeviceSecret } from '../auth/device-proof.js';
import { consumeCode } from '../codes.js';
import type { Lockouts } from '../auth/lockout.js';
import { DEVICE_CHANNELS } from '../auth/login.js';
import type { Sessions } from '../auth/sessions.js';
import { authCollections, type AuthCollections, type DeviceDocument } from '../auth/datasource.js';
import { usersCollection, type Segment, type UserDocument } from '../profile/datasource.js';
import { prospectCollections, type ProspectDocument } from './datasource.js';
import type { Referrals } from './referrals.js';
import { isOneOf, ownValue } from '../../../../platform/contracts/own.js';

/** Where each preSegment leads: the segment a new user gets. `recovery` is for existing users. */
export const PRE_SEGMENTS: Readonly<Record<string, Segment>> = {
  retail: 'retail',
  student: 'student',
  premium: 'premium',
  business: 'smallBusiness',
};
const RECOVERY = 'recovery';

/** The document images a prospect may upload, and the file types accepted. */
export const DOCUMENT_TYPES = ['idFront', 'idBack', 'passport', 'selfie'] as const;
const IMAGE_TYPES: readonly FileType[] = ['image/jpeg', 'image/png'];
const MAX_IMAGE_BYTES = 2 * 1024 * 1024;

const RECOVERY_CODE_LIFETIME_MS = 15 * 60 * 1000;

function requireProspect(principal: Principal): Extract<Principal, { kind: 'prospect' }> {
  if (principal.kind !== 'prospect')
    throw appError(ErrorCode.UNAUTHENTICATED, 'This operation needs the prospect token from POST /prospect/data.');
  return principal;
}

/** Onboarding: prospect data and images, device registration for prospects and recovering users. */
export class Onboarding {
  private readonly auth: AuthCollections;
  private readonly users: Collection<UserDocument>;
  private readonly collections: ReturnType<typeof prospectCollections>;
  private readonly images: GridFSBucket;

  constructor(
    db: Db,
    private readonly sessions: Sessions,
    private readonly lockouts: Lockouts,
    private readonly referrals: Referrals,
    private readonly notifier: Notifier,
    private readonly config: ServiceConfig<'user'>,
    private readonly logger: Logger,
  ) {
    this.auth = authCollections(db);
    this.users = usersCollection(db);
    this.collections = prospectCollections(db);
    this.images = new GridFSBucket(db, { bucketName: 'prospectImages' });
  }

  /**
   * `POST /prospect/data`: records a prospect and issues its token. Without a credential it always
   * starts a new prospect (knowing a device tag must not give access to someone else's
   * onboarding); with the prospect's own token it updates that prospect and replaces the token.
   */
  async submitData(principal: Principal, input: Record<string, unknown>) {
    const deviceTag = checkString(required(input.deviceTag, 'deviceTag'), 'deviceTag', DEVICE_TAG_RULE)!;
    const preSegment = checkString(required(input.preSegment, 'preSegment'), 'preSegment', { max: 64 })!;
    const segment = ownValue(PRE_SEGMENTS, preSegment);
    if (!segment)
      throw appError(
        ErrorCode.VALIDATION_FAILED,
        `preSegment ${preSegment} leads to no segment; known: ${Object.keys(PRE_SEGMENTS).join(', ')}.`,
        { field: 'preSegment' },
      );
    const fields = {
      firstName: checkString(input.firstName, 'firstName', { min: 1, max: 100, safeText: true }) ?? null,
      lastName: checkString(input.lastName, 'lastName', { min: 1, max: 100, safeText: true }) ?? null,
      email: checkString(input.email, 'email', EMAIL_RULE) ?? null,
      mobile: checkString(input.mobile, 'mobile', PHONE_RULE) ?? null,
      languageCode:
        checkString(input.languageCode, 'languageCode', {
          pattern: /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/,
          patternText: 'a language code such as en or en-US',
        }) ?? null,
      data: (input.data as Record<string, unknown> | null | undefined) ?? null,
    };
    if (fields.data && JSON.stringify(fields.data).length > 10_000)
      throw appError(ErrorCode.VALIDATION_FAILED, 'data must be at most 10000 characters of JSON.', { field: 'data' });
    if (await this.auth.devices.findOne({ _id: deviceTag }, { projection: { _id: 1 } })) {
      throw appError(ErrorCode.CONFLICT, 'This device is already registered; log in instead, or recover with preSegment recovery.', {
        field: 'deviceTag',
      });
    }
    const now = new Date();
    let prospect: ProspectDocument | null;
    if (principal.kind === 'prospect') {
      if (principal.deviceTag !== deviceTag)
        throw appError(ErrorCode.VALIDATION_FAILED, "deviceTag is not the prospect's device.", { field: 'deviceTag' });
      prospect = await this.collections.prospects.findOneAndUpdate(
        { _id: principal.prospectId, status: 'open' },
        { $set: { preSegment, segment, ...fields, dtsModified: now } },
        { returnDocument: 'after' },
      );
      if (!prospect) throw appError(ErrorCode.CONFLICT, 'This prospect is already registered.');
      await this.sessions.revoke(principal.sessionId);
    } else {
      prospect = {
        _id: newId('prs_'),
        deviceTag,
        preSegment,
        segment,
        ...fields,
        status: 'open',
        SvcUserId: null,
        dtsCreated: now,
        dtsModified: now,
      };
      await this.collections.prospects.insertOne(prospect);
    }
    const { token, dtsExpiry } = await this.sessions.issue(
      { kind: 'prospect', prospectId: prospect._id, deviceTag },
      this.config.prospectTokenLifetimeSeconds,
    );
    this.logger.info('prospect data recorded', { prospectId: prospect._id, segment });
    return { success: true, prospectId: prospect._id, segment, token, dtsExpiry };
  }

  /** `POST /prospect/image`: checks type (by content, not only by name) and size, and stores the image in GridFS. */
  async uploadImage(principal: Principal, input: Record<string, unknown>) {
    const prospect = requireProspect(principal);
    const documentType = checkString(required(input.documentType, 'documentType'), 'documentType')!;
    const contentType = checkString(required(input.contentType, 'contentType'), 'contentType')!;
    const base64 = checkString(required(input.imageBase64, 'imageBase64'), 'imageBase64')!;
    if (!isOneOf(DOCUMENT_TYPES, documentType)) {
      throw appError(ErrorCode.VALIDATION_FAILED, `documentType must be one of ${DOCUMENT_TYPES.join(', ')}.`, { field: 'documentType' });
    }
    if (!(IMAGE_TYPES as readonly string[]).includes(contentType))
      throw appError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `contentType must be one of ${IMAGE_TYPES.join(', ')}.`, { field: 'contentType' });
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64))
      throw appError(ErrorCode.VALIDATION_FAILED, 'imageBase64 must be base64.', { field: 'imageBase64' });
    if (base64.length > Math.ceil(MAX_IMAGE_BYTES / 3) * 4)
      throw appError(ErrorCode.PAYLOAD_TOO_LARGE, `The image must be at most ${MAX_IMAGE_BYTES} bytes.`, { field: 'imageBase64' });
    const bytes = Buffer.from(base64, 'base64');
    if (bytes.length === 0 || bytes.length > MAX_IMAGE_BYTES)
      throw appError(ErrorCode.PAYLOAD_TOO_LARGE, `The image must be 1 to ${MAX_IMAGE_BYTES} bytes.`, { field: 'imageBase64' });
    if (detectFileType(bytes, IMAGE_TYPES) !== contentType)
      throw appError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `The file's content is not ${contentType}.`, { field: 'imageBase64' });
    const id = newId('img_');
    await storeFile(this.images, id, `${prospect.prospectId}-${documentType}`, bytes, {
      prospectId: prospect.prospectId,
      deviceTag: prospect.deviceTag,
      documentType,
      contentType,
    });
    this.logger.info('prospect image stored', { prospectId: prospect.prospectId, documentType, size: bytes.length });
    return { success: true, imageId: id, documentType, contentType, size: bytes.length };
  }

  /** `POST /recovery/code`: sends a code to the user's email for registering a new device. */
  async requestRecoveryCode(principal: Principal, input: Record<string, unknown>) {
    if (principal.kind !== 'user') throw appError(ErrorCode.UNAUTHENTICATED, 'Recovery needs the token of an existing user.');
    const deviceTag = checkString(required(input.deviceTag, 'deviceTag'), 'deviceTag', DEVICE_TAG_RULE)!;
    if (await this.auth.devices.findOne({ _id: deviceTag }, { projection: { _id: 1 } })) {
      throw appError(ErrorCode.CONFLICT, 'Recovery declined: credentials already exist for this device.', { field: 'deviceTag' });
    }
    const user = await this.users.findOne({ _id: principal.userId });
    if (!user?.email || !user.isEmailConfirmed)
      throw appError(ErrorCode.VALIDATION_FAILED, 'The user has no confirmed email to send a recovery code to.', { field: 'email' });
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const dtsExpiry = new Date(Date.now() + RECOVERY_CODE_LIFETIME_MS);
    await this.collections.recoveryCodes.replaceOne(
      { _id: `${user.SvcUserId}:${deviceTag}` },
      { SvcUserId: user.SvcUserId, deviceTag, codeHash: sha256(`${user.SvcUserId}:${deviceTag}:${code}`), attempts: 0, dtsExpiry },
      { upsert: true },
    );
    await this.notifier.email({
      to: user.email,
      subject: 'Your recovery code',
      text: `Your code for registering a new device is ${code}. It is valid for 15 minutes.`,
    });
    return { success: true, sentTo: maskRecipient(user.email), dtsExpiry };
  }

  /** `POST /prospect/connectsocket`: records a prospect's request for an onboarding socket. */
  async connectSocket(principal: Principal, input: Record<string, unknown>) {
    const prospect = requireProspect(principal);
    const deviceTag = checkString(required(input.deviceTag, 'deviceTag'), 'deviceTag', DEVICE_TAG_RULE)!;
    const socketId = checkString(required(input.socketId, 'socketId'), 'socketId', { min: 1, max: 128, safeText: true })!;
    if (deviceTag !== prospect.deviceTag)
      throw appError(ErrorCode.VALIDATION_FAILED, "deviceTag is not the prospect's device.", { field: 'deviceTag' });
    const now = new Date();
    const record = {
      _id: newId('sock_'),
      prospectId: prospect.prospectId,
      deviceTag,
      socketId,
      dtsCreated: now,
      dtsExpiry: new Date(now.getTime() + 3600_000),
    };
    await this.collections.onboardingSockets.insertOne(record);
    return { success: true, socketRequestId: record._id, dtsExpiry: record.dtsExpiry };
  }

  /**
   * `POST /prospect/registration`. Missing deviceTag, preSegment or deviceData locks the actor
   * for the lock period. A recovering user (preSegment `recovery`) registers a new device with
   * the recovery code; a prospect becomes an idle user, then a user, with a new device.
   */
  async register(principal: Principal, input: Record<string, unknown>, clientIp: string | null) {
    if (principal.kind !== 'prospect' && principal.kind !== 'user')
      throw appError(ErrorCode.UNAUTHENTICATED, 'Registration needs a prospect token or, for recovery, a user token.');
    const actor = principal.kind === 'prospect' ? `prospect:${principal.prospectId}` : `user:${principal.userId}`;
    await this.lockouts.refuseIfLocked(actor);
    for (const field of ['deviceTag', 'preSegment', 'deviceData'] as const) {
      if (input[field] === undefined || input[field] === null || input[field] === '') {
        await this.lockouts.lockNow(actor);
        throw appError(
          ErrorCode.REQUIRED_ELEMENT_MISSING,
          `${field} is required; the registration is locked for ${this.config.lockPeriodSeconds} s.`,
          { field },
        );
      }
    }
    const deviceTag = checkString(input.deviceTag, 'deviceTag', DEVICE_TAG_RULE)!;
    const preSegment = checkString(input.preSegment, 'preSegment', { max: 64 })!;
    const deviceData = input.deviceData as Record<string, unknown>;
    const referral = checkString(input.referral, 'referral', { min: 1, max: 36 }) ?? null;
    const device = this.plannedDevice(deviceTag, deviceData, clientIp);
    if (await this.auth.devices.findOne({ _id: deviceTag }, { projection: { _id: 1 } })) {
      throw appError(ErrorCode.CONFLICT, 'This device is already registered.', { field: 'deviceTag' });
    }
    if (preSegment === RECOVERY) return this.recover(principal, device, deviceData, actor);
    if (principal.kind !== 'prospect')
      throw appError(ErrorCode.VALIDATION_FAILED, 'An existing user registers a new device with preSegment recovery.', {
        field: 'preSegment',
      });
    const segment = ownValue(PRE_SEGMENTS, preSegment);
    if (!segment) throw appError(ErrorCode.VALIDATION_FAILED, `Unknown preSegment ${preSegment}.`, { field: 'preSegment' });
    if (deviceTag !== principal.deviceTag)
      throw appError(ErrorCode.VALIDATION_FAILED, "deviceTag is not the prospect's device.", { field: 'deviceTag' });
    const referrer = referral ? await this.users.findOne({ referralCode: referral }, { projection: { _id: 1 } }) : null;
    if (referral && !referrer) throw appError(ErrorCode.VALIDATION_FAILED, 'referral is not a known referral code.', { field: 'referral' });

    // Claim the prospect: of two racing registrations, only one converts it.
    const prospect = await this.collections.prospects.findOneAndUpdate(
      { _id: principal.prospectId, status: 'open' },
      { $set: { status: 'converting' } },
      { returnDocument: 'after' },
    );
    if (!prospect) throw appError(ErrorCode.CONFLICT, 'This prospect is already registered.');
    let SvcUserId: string | null = null;
    try {
      SvcUserId = await this.insertIdleUser(prospect, segment);
      await this.auth.devices.insertOne({ ...device.document, SvcUserId });
      const now = new Date();
      await this.users.updateOne({ _id: SvcUserId }, { $set: { isIdleUser: false, isActive: true, dtsRegistered: now, dtsModified: now } });
    } catch (error) {
      if (SvcUserId) {
        await this.auth.devices.deleteOne({ _id: device.document._id, SvcUserId });
        await this.users.deleteOne({ _id: SvcUserId });
      }
      await this.collections.prospects.updateOne({ _id: prospect._id }, { $set: { status: 'open' } });
      if (error instanceof MongoServerError && error.code === 11000)
        throw appError(ErrorCode.CONFLICT, 'This device is already registered.', { field: 'deviceTag' });
      this.logger.error('converting the prospect into a user failed', { error, prospectId: prospect._id });
      throw appError(ErrorCode.INTERNAL, 'Converting the prospect into a user failed.');
    }
    await this.collections.prospects.updateOne(
      { _id: prospect._id },
      { $set: { status: 'registered', SvcUserId, dtsModified: new Date() } },
    );
    // Only a claim: the bonus task waits for the new user's confirmed email and mobile (Referrals).
    if (referral && referrer) await this.referrals.claim(SvcUserId, referrer._id, referral, device.document);
    await this.sessions.revoke(principal.sessionId);
    this.logger.info('prospect registered', { prospectId: prospect._id, SvcUserId, channel: device.channel });
    return this.registered(SvcUserId, device, segment, false);
  }

  private async recover(
    principal: Principal,
    device: ReturnType<Onboarding['plannedDevice']>,
    deviceData: Record<string, unknown>,
    actor: string,
  ) {
    if (principal.kind !== 'user')
      throw appError(ErrorCode.VALIDATION_FAILED, 'No user found for recovery: recovery needs the token of an existing user.', {
        field: 'preSegment',
      });
    const user = await this.users.findOne({ _id: principal.userId });
    if (!user) throw appError(ErrorCode.VALIDATION_FAILED, 'No user found for recovery.', { field: 'preSegment' });
    if (user.isHardened) {
      this.logger.warn('recovery of a hardened user refused', { SvcUserId: user.SvcUserId });
      await this.notifier.email({
        to: this.config.operatorEmail,
        subject: 'Refused: recovery of a hardened user',
        text: `Someone tried to register device ${device.document._id} to hardened user ${user.SvcUserId}.`,
      });
      throw appError(ErrorCode.RECOVERY_REFUSED, 'This user cannot be recovered onto a new device; contact support.');
    }
    const code = checkString(required(deviceData.recoveryCode, 'deviceData.recoveryCode'), 'deviceData.recoveryCode', {
      pattern: /^[0-9]{6}$/,
      patternText: 'six digits',
    })!;
    const attempt = await this.lockouts.reserve(actor);
    try {
      const pending = await consumeCode(
        this.collections.recoveryCodes,
        `${user.SvcUserId}:${device.document._id}`,
        sha256(`${user.SvcUserId}:${device.document._id}:${code}`),
      );
      if (!pending) {
        await attempt.failed();
        throw appError(ErrorCode.CODE_INVALID, 'The recovery code is wrong, expired or used up.', { field: 'deviceData.recoveryCode' });
      }
      await attempt.succeeded();
    } finally {
      await attempt.release();
    }
    try {
      await this.auth.devices.insertOne({ ...device.document, SvcUserId: user.SvcUserId });
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 11000)
        throw appError(ErrorCode.CONFLICT, 'This device is already registered.', { field: 'deviceTag' });
      throw error;
    }
    this.logger.info('device recovered', { SvcUserId: user.SvcUserId, channel: device.channel, ipAddress: device.document.ipAddress });
    return this.registered(user.SvcUserId, device, user.segment, true);
  }

  /** The device to store, from deviceData: its channel (mobile by default), android's uuid, a browser's deviceId. */
  private plannedDevice(deviceTag: string, deviceData: Record<string, unknown>, clientIp: string | null) {
    const channel = deviceData.channel ?? 'mobile';
    if (!isOneOf(DEVICE_CHANNELS, channel)) {
      throw appError(ErrorCode.VALIDATION_FAILED, `deviceData.channel must be one of ${DEVICE_CHANNELS.join(', ')}.`, {
        field: 'deviceData.channel',
      });
    }
    const uuid =
      channel === 'android'
        ? checkString(required(deviceData.uuid, 'deviceData.uuid'), 'deviceData.uuid', {
            pattern: /^[0-9A-Za-z-]{36}$/,
            patternText: '36 digits, letters or dashes',
          })!
        : null;
    const deviceId = channel === 'browser' ? newDeviceSecret() : null;
    const serverSecret = newDeviceSecret();
    const { recoveryCode: _omit, ...storedData } = deviceData;
    const document: DeviceDocument = {
      _id: deviceTag,
      SvcUserId: '',
      channels: [channel],
      serverSecret,
      uuid,
      deviceIdHash: deviceId ? sha256(deviceId) : null,
      lastProofAt: null,
      deviceData: storedData,
      ipAddress: clientIp,
      dtsRegistered: new Date(),
    };
    return { document, channel, serverSecret, deviceId };
  }

  private async registered(
    SvcUserId: string,
    device: ReturnType<Onboarding['plannedDevice']>,
    segment: Segment | null,
    isRecovery: boolean,
  ) {
    const { token, dtsExpiry } = await this.sessions.issue(
      { kind: 'user', SvcUserId, channel: device.channel },
      this.config.tokenLifetimeSeconds,
    );
    return {
      success: true,
      userId: SvcUserId,
      SvcUserId,
      deviceTag: device.document._id,
      channel: device.channel,
      serverSecret: device.serverSecret,
      deviceId: device.deviceId,
      isRecovery,
      token,
      dtsExpiry,
      segment,
    };
  }

  /** Stores the prospect as an idle user under a new random SvcUserId, retrying on the rare collision. */
  private async insertIdleUser(prospect: ProspectDocument, segment: Segment): Promise<string> {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const SvcUserId = newId('usr_');
      const now = new Date();
      try {
        await this.users.insertOne({
          _id: SvcUserId,
          SvcUserId,
          names: [prospect.firstName, prospect.lastName].filter((n): n is string => Boolean(n)),
          firstName: prospect.firstName,
          middleName: null,
          lastName: prospect.lastName,
          sortId: null,
          languageCode: prospect.languageCode,
          segment,
          referralCode: newId().slice(0, 10).toUpperCase(),
          extras: null,
          private: false,
          isFullyRegistered: false,
          isIdleUser: true,
          isActive: false,
          isMetric: true,
          isEmailConfirmed: false,
          isMobilePhoneConfirmed: false,
          uiStage: 'onboarding',
          dosDob: null,
          addresses: [],
          mobile: prospect.mobile,
          phoneNumber: null,
          email: prospect.email,
          homecurrency: null,
          postOnboardingStepsRequired: 'kyc',
          faceImage: null,
          mainSvcAccountId: null,
          phoneNumbers: [],
          emails: [],
          clientDtsModified: null,
          isHardened: false,
          dtsCreated: now,
          dtsCreatedAtUsers: now,
          dtsModified: now,
          dtsRegistered: null,
        });
        return SvcUserId;
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      }
    }
    throw new Error('could not find an unused SvcUserId');
  }
}
