import type { Config } from '../../../../platform/config.js';
import { appError, ErrorCode } from '../../../../platform/errors.js';
import type { Logger } from '../../../../platform/logger.js';
import type { Principal } from '../../../../platform/principal.js';
import { isIsoDateTime } from '../../../../platform/scalars.js';
import { DUMMY_PASSWORD_HASH, newId, newOpaqueToken, sha256, verifyPassword } from '../../../../platform/secrets.js';
import type { AuthCollections } from '../datasources/auth.js';
import type { UserDocument } from '../datasources/users.js';
import type { Collection } from 'mongodb';

/** The ten documented login channels and the properties each one requires. */
export const CHANNEL_REQUIREMENTS = {
  internet: ['userName', 'password'],
  android: ['uuid', 'deviceTagOpen', 'signature'],
  browser: ['deviceId'],
  statementGenerator: ['userId'],
  dicBuilder: ['userId'],
  chat: ['transportUserId', 'transport'],
  android_v1: ['deviceTag', 'dtsValueString', 'cryptotext'],
  ios_v1: ['deviceTag', 'dtsValueString', 'cryptotext'],
  mobile: ['deviceTag', 'dtsValueString', 'cryptotext'],
  test: ['deviceTag'],
} as const satisfies Record<string, readonly string[]>;

export type Channel = keyof typeof CHANNEL_REQUIREMENTS;

/** Channels whose device may be shared or that are not a user's own device: nothing is saved locally. */
const NO_LOCAL_SAVING: ReadonlySet<string> = new Set(['internet', 'browser', 'statementGenerator', 'dicBuilder', 'chat']);

/** Channels this release authenticates. The device channels' possession proofs are not built yet. */
const AUTHENTICATED_CHANNELS: ReadonlySet<string> = new Set(['internet', 'test']);

/** A login request as the graph receives it: every property optional, checked here per channel. */
export type LoginRequest = { [key: string]: unknown; channel?: unknown };

export interface LoginResponse {
  success: true;
  userId: string;
  SvcUserId: string;
  token: string;
  segment: string | null;
  postOnboardingStepsRequired: string | null;
  dtsExpiry: Date;
  isLocalSavingAllowed: boolean;
}

const present = (value: unknown) => typeof value === 'string' && value.trim() !== '';

/**
 * Checks the shape of a login request, in the order of the spec's Errors table: a missing
 * channel, an unknown channel, a channel property missing, a badly formatted date/time stamp.
 */
export function validateLoginRequest(input: LoginRequest): Channel {
  if (input.channel === undefined || input.channel === null || input.channel === '') {
    throw appError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'channel is required.', { field: 'channel' });
  }
  if (typeof input.channel !== 'string' || !Object.hasOwn(CHANNEL_REQUIREMENTS, input.channel)) {
    throw appError(ErrorCode.INVALID_CHANNEL, `channel must be one of ${Object.keys(CHANNEL_REQUIREMENTS).join(', ')}.`, { field: 'channel' });
  }
  const channel = input.channel as Channel;
  for (const field of CHANNEL_REQUIREMENTS[channel]) {
    if (!present(input[field])) {
      throw appError(ErrorCode.CHANNEL_PROPERTY_MISSING, `${field} is required for channel ${channel}.`, { field });
    }
  }
  if ((CHANNEL_REQUIREMENTS[channel] as readonly string[]).includes('dtsValueString')) {
    if (!isIsoDateTime(String(input.dtsValueString))) {
      throw appError(ErrorCode.INVALID_TIMESTAMP, 'dtsValueString must be an ISO 8601 date-time with a time zone.', { field: 'dtsValueString' });
    }
  }
  return channel;
}

/** Issues and revokes sessions, counting failures per actor and locking it after too many. */
export class Authenticator {
  constructor(
    private readonly auth: AuthCollections,
    private readonly users: Collection<UserDocument>,
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  async login(input: LoginRequest, caller: Principal): Promise<LoginResponse> {
    const channel = validateLoginRequest(input);
    if (channel === 'test' && !this.config.testChannelEnabled) {
      throw appError(ErrorCode.CHANNEL_NOT_PERMITTED, 'The test channel is not enabled in this deployment.', { field: 'channel' });
    }
    if ((channel === 'statementGenerator' || channel === 'dicBuilder') && caller.kind !== 'service') {
      throw appError(ErrorCode.CHANNEL_NOT_PERMITTED, `The ${channel} channel is for internal services only.`, { field: 'channel' });
    }
    if (!AUTHENTICATED_CHANNELS.has(channel)) {
      throw appError(ErrorCode.CHANNEL_NOT_PERMITTED, `The ${channel} channel is not available in this release.`, { field: 'channel' });
    }

    const actor = channel === 'internet' ? `internet:${String(input.userName).toLowerCase()}` : `device:${String(input.deviceTag)}`;
    await this.refuseIfLocked(actor);

    const userId = channel === 'internet'
      ? await this.checkPassword(String(input.userName), String(input.password))
      : await this.checkDevice(String(input.deviceTag), channel);
    const user = userId ? await this.users.findOne({ _id: userId }) : null;
    if (!user) {
      await this.recordFailure(actor);
      this.logger.info('login failed', { channel, reason: 'authentication unsuccessful' });
      throw appError(ErrorCode.UNAUTHENTICATED, 'Authentication unsuccessful.');
    }
    if (!user.isActive) {
      this.logger.info('login refused', { channel, SvcUserId: user.SvcUserId, reason: 'blocked' });
      throw appError(ErrorCode.ACTOR_LOCKED, 'This user is blocked.');
    }
    await this.auth.lockouts.deleteOne({ _id: actor });

    const token = newOpaqueToken();
    const now = new Date();
    const dtsExpiry = new Date(now.getTime() + this.config.tokenLifetimeSeconds * 1000);
    await this.auth.sessions.insertOne({
      _id: newId('ses_'),
      tokenHash: sha256(token),
      SvcUserId: user.SvcUserId,
      channel,
      dtsCreated: now,
      dtsExpiry,
      dtsRevoked: null,
    });
    this.logger.info('login', { channel, SvcUserId: user.SvcUserId });
    return {
      success: true,
      userId: user.SvcUserId,
      SvcUserId: user.SvcUserId,
      token,
      segment: user.segment,
      postOnboardingStepsRequired: user.postOnboardingStepsRequired,
      dtsExpiry,
      isLocalSavingAllowed: !NO_LOCAL_SAVING.has(channel),
    };
  }

  /** Revokes one session; true when it was live. */
  async logout(sessionId: string): Promise<boolean> {
    const result = await this.auth.sessions.updateOne({ _id: sessionId, dtsRevoked: null }, { $set: { dtsRevoked: new Date() } });
    return result.modifiedCount === 1;
  }

  /** The principal of a live session token, or null when it is unknown, expired or revoked. */
  async resolveToken(token: string): Promise<Principal | null> {
    const session = await this.auth.sessions.findOne({ tokenHash: sha256(token) });
    if (!session || session.dtsRevoked !== null || session.dtsExpiry.getTime() <= Date.now()) return null;
    return { kind: 'user', userId: session.SvcUserId, sessionId: session._id, channel: session.channel };
  }

  private async checkPassword(userName: string, password: string): Promise<string | null> {
    const credential = await this.auth.credentials.findOne({ _id: userName.toLowerCase() });
    // Hash even for an unknown name, so the answer takes as long either way.
    const ok = await verifyPassword(password, credential?.passwordHash ?? DUMMY_PASSWORD_HASH);
    return ok && credential ? credential.SvcUserId : null;
  }

  private async checkDevice(deviceTag: string, channel: Channel): Promise<string | null> {
    const device = await this.auth.devices.findOne({ _id: deviceTag, channels: channel });
    return device?.SvcUserId ?? null;
  }

  private async refuseIfLocked(actor: string): Promise<void> {
    const lock = await this.auth.lockouts.findOne({ _id: actor });
    if (lock?.lockedUntil && lock.lockedUntil.getTime() > Date.now()) {
      this.logger.info('login refused', { reason: 'locked', lockedUntil: lock.lockedUntil.toISOString() });
      throw appError(ErrorCode.ACTOR_LOCKED, `Too many failed logins: locked until ${lock.lockedUntil.toISOString()}.`);
    }
  }

  /** Counts a failure atomically; the one that reaches the limit sets the lock and restarts the count. */
  private async recordFailure(actor: string): Promise<void> {
    const now = new Date();
    const windowStart = new Date(now.getTime() - this.config.lockPeriodSeconds * 1000);
    // Failures older than one lock period are forgotten.
    await this.auth.lockouts.updateOne({ _id: actor, dtsLastFailure: { $lt: windowStart } }, { $set: { failures: 0 } });
    const after = await this.auth.lockouts.findOneAndUpdate(
      { _id: actor },
      { $inc: { failures: 1 }, $set: { dtsLastFailure: now } },
      { upsert: true, returnDocument: 'after' },
    );
    if (after && after.failures >= this.config.loginMaxFailures) {
      const lockedUntil = new Date(now.getTime() + this.config.lockPeriodSeconds * 1000);
      await this.auth.lockouts.updateOne({ _id: actor, failures: after.failures }, { $set: { lockedUntil, failures: 0 } });
      this.logger.warn('actor locked', { lockedUntil: lockedUntil.toISOString(), failures: after.failures });
    }
  }
}
