import type { Collection } from 'mongodb';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import type { ServiceConfig } from '../../../../platform/runtime/config-slices.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { SERVICE_CHANNELS, type Principal } from '../../../../platform/contracts/principal.js';
import { isIsoDateTime } from '../../../../platform/contracts/dates.js';
import { DUMMY_PASSWORD_HASH, sha256, verifyPassword } from '../../../../platform/security/secrets.js';
import type { LoginChannel } from '../__generated__/schema-types.js';
import type { AuthCollections, DeviceDocument } from './datasource.js';
import type { Segment, UserDocument } from '../profile/datasource.js';
import { verifyAndroidSignature, verifyCryptotext } from './device-proof.js';
import type { Lockouts } from './lockout.js';
import type { Sessions } from './sessions.js';
import { isOwnKey } from '../../../../platform/contracts/own.js';
import { keyScopeOf, scopeAllowsChannel, scopeAllowsUser } from '../../../../platform/security/service-scope.js';

/** The properties each login channel requires; its keys are exactly the schema's LoginChannel values. */
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
} as const satisfies Record<LoginChannel, readonly string[]>;

/** A login channel: a value of the schema's LoginChannel enum. */
export type Channel = LoginChannel;

/** Channels a device registers for (deviceData.channel at registration). */
export const DEVICE_CHANNELS = ['android', 'android_v1', 'ios_v1', 'mobile', 'browser'] as const satisfies readonly LoginChannel[];

/** Channels only internal services may use: the caller is a service, not the user's device. */
const SERVICE_LOGIN_CHANNELS: ReadonlySet<string> = new Set<LoginChannel>(SERVICE_CHANNELS);

/** Channels whose device may be shared or that are not a user's own device: nothing is saved locally. */
const NO_LOCAL_SAVING: ReadonlySet<string> = new Set<LoginChannel>(['internet', 'browser', 'statementGenerator', 'dicBuilder', 'chat']);

/** A login request as the graph receives it: every property optional, checked here per channel. */
export type LoginRequest = { [key: string]: unknown; channel?: unknown };

export interface LoginResponse {
  success: true;
  userId: string;
  SvcUserId: string;
  token: string;
  segment: Segment | null;
  postOnboardingStepsRequired: string | null;
  dtsExpiry: Date;
  isLocalSavingAllowed: boolean;
}

const present = (value: unknown) => typeof value === 'string' && value.trim() !== '';

/**
 * Checks the shape of a login request, in the order of the spec's Errors table: a missing
 * channel, an unknown channel, a channel property missing, a badly formatted date/time stamp.
 */
function validateLoginRequest(input: LoginRequest): Channel {
  if (input.channel === undefined || input.channel === null || input.channel === '') {
    throw appError(ErrorCode.REQUIRED_ELEMENT_MISSING, 'channel is required.', { field: 'channel' });
  }
  const channel = input.channel;
  if (!isOwnKey(CHANNEL_REQUIREMENTS, channel)) {
    throw appError(ErrorCode.INVALID_CHANNEL, `channel must be one of ${Object.keys(CHANNEL_REQUIREMENTS).join(', ')}.`, {
      field: 'channel',
    });
  }
  const requirements: readonly string[] = CHANNEL_REQUIREMENTS[channel];
  for (const field of requirements) {
    if (!present(input[field])) {
      throw appError(ErrorCode.CHANNEL_PROPERTY_MISSING, `${field} is required for channel ${channel}.`, { field });
    }
  }
  if (requirements.includes('dtsValueString') && !isIsoDateTime(String(input.dtsValueString))) {
    throw appError(ErrorCode.INVALID_TIMESTAMP, 'dtsValueString must be an ISO 8601 date-time with a time zone.', {
      field: 'dtsValueString',
    });
  }
  if (channel === 'android' && !/^[0-9A-Za-z-]{36}$/.test(String(input.uuid))) {
    throw appError(ErrorCode.CHANNEL_PROPERTY_MISSING, 'uuid must be 36 characters of digits, letters and dashes.', { field: 'uuid' });
  }
  return channel;
}

/** Why an authentication attempt failed, for the log only: the caller always hears "unsuccessful". */
class AuthenticationFailed extends Error {
  /** True when no user has the name given: it may be a password typed into the wrong field. */
  unknownName = false;
}

/** Issues end-user sessions over every channel, counting failures per actor and locking it after too many. */
export class Authenticator {
  constructor(
    private readonly auth: AuthCollections,
    private readonly users: Collection<UserDocument>,
    private readonly sessions: Sessions,
    private readonly lockouts: Lockouts,
    private readonly config: ServiceConfig<'user'>,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
  ) {}

  async login(input: LoginRequest, caller: Principal): Promise<LoginResponse> {
    const channel = validateLoginRequest(input);
    const text = (field: string) => String(input[field]);
    if (channel === 'test' && !this.config.testChannelEnabled) {
      throw appError(ErrorCode.CHANNEL_NOT_PERMITTED, 'The test channel is not enabled in this deployment.', { field: 'channel' });
    }
    if (SERVICE_LOGIN_CHANNELS.has(channel) && caller.kind !== 'service') {
      throw appError(ErrorCode.CHANNEL_NOT_PERMITTED, `The ${channel} channel is for internal services only (header x-service-key).`, {
        field: 'channel',
      });
    }
    // A service key logs in only over the channels its scope names, and (statement generator, DIC
    // builder) only for the users it names: checked before the user is looked at, so the answer
    // says nothing about whether the user exists.
    const scope = keyScopeOf(caller);
    if (scope && !scopeAllowsChannel(scope, channel)) {
      throw appError(ErrorCode.CHANNEL_NOT_PERMITTED, `This service key's scope does not include the ${channel} channel.`, {
        field: 'channel',
      });
    }
    if (scope && (channel === 'statementGenerator' || channel === 'dicBuilder') && !scopeAllowsUser(scope, text('userId'))) {
      throw appError(ErrorCode.CHANNEL_NOT_PERMITTED, "This service key's scope does not include this user.", { field: 'userId' });
    }

    const actor = this.actorOf(channel, input);
    // A test-channel device tag is that channel's whole credential, and a name no user has may be
    // a password typed into the wrong field: the audit log names either by a hash.
    const hashed = `${actor.slice(0, actor.indexOf(':'))}:sha256:${sha256(actor).slice(0, 16)}`;
    const auditName = async () => {
      if (channel === 'test') return hashed;
      if (channel !== 'internet') return actor;
      return (await this.auth.credentials.findOne({ _id: text('userName').toLowerCase() }, { projection: { _id: 1 } })) ? actor : hashed;
    };
    const attempt = await this.lockouts.reserve(actor, auditName);
    let user: UserDocument | null;
    try {
      let userId: string;
      try {
        userId = await this.authenticate(channel, text);
      } catch (error) {
        if (!(error instanceof AuthenticationFailed)) throw error;
        this.logger.info('login failed', { channel, reason: error.message });
        const audited = channel === 'test' || error.unknownName ? hashed : actor;
        await this.audit.record('LOGIN_FAILED', { type: 'actor', id: audited }, { channel, reason: error.message });
        await attempt.failed();
        throw appError(ErrorCode.UNAUTHENTICATED, 'Authentication unsuccessful.');
      }
      user = await this.users.findOne({ _id: userId });
      if (!user) await attempt.failed();
      // A blocked user's right credential, or a user outside the service key's scope, is released,
      // not counted: it is refused below; it neither locks nor counts as a login from this source.
      else if (user.isActive && (!scope || scopeAllowsUser(scope, user.SvcUserId))) await attempt.succeeded();
    } finally {
      await attempt.release();
    }
    if (!user) throw appError(ErrorCode.UNAUTHENTICATED, 'Authentication unsuccessful.');
    // The chat channel finds its user from the transport identity: held to the key's users here.
    if (scope && !scopeAllowsUser(scope, user.SvcUserId)) {
      this.logger.info('login refused', { channel, SvcUserId: user.SvcUserId, reason: 'outside the service key scope' });
      await this.audit.record('LOGIN_REFUSED', { type: 'user', id: user.SvcUserId }, { channel, reason: 'service key scope' });
      throw appError(ErrorCode.CHANNEL_NOT_PERMITTED, "This service key's scope does not include this user.", { field: 'transportUserId' });
    }
    if (!user.isActive) {
      this.logger.info('login refused', { channel, SvcUserId: user.SvcUserId, reason: 'blocked' });
      await this.audit.record('LOGIN_REFUSED', { type: 'user', id: user.SvcUserId }, { channel, reason: 'blocked' });
      throw appError(ErrorCode.ACTOR_LOCKED, 'This user is blocked.');
    }
    const { token, dtsExpiry } = await this.sessions.issue(
      { kind: 'user', SvcUserId: user.SvcUserId, channel },
      this.config.tokenLifetimeSeconds,
    );
    this.logger.info('login', { channel, SvcUserId: user.SvcUserId });
    await this.audit.record('LOGIN_SUCCEEDED', { type: 'user', id: user.SvcUserId }, { channel });
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

  /** The actor whose failures are counted: the user name, the device, the user id or the chat identity. */
  private actorOf(channel: Channel, input: LoginRequest): string {
    switch (channel) {
      case 'internet':
        return `internet:${String(input.userName).toLowerCase()}`;
      case 'android':
        return `device:${String(input.deviceTagOpen)}`;
      case 'browser':
        return `browser:${sha256(String(input.deviceId)).slice(0, 32)}`;
      case 'statementGenerator':
      case 'dicBuilder':
        return `user:${String(input.userId)}`;
      case 'chat':
        return `chat:${String(input.transport)}:${String(input.transportUserId)}`;
      default:
        return `device:${String(input.deviceTag)}`;
    }
  }

  /** Checks the channel's credential; returns the user id or throws AuthenticationFailed. */
  private async authenticate(channel: Channel, text: (field: string) => string): Promise<string> {
    switch (channel) {
      case 'internet': {
        const credential = await this.auth.credentials.findOne({ _id: text('userName').toLowerCase() });
        // Hash even for an unknown name, so the answer takes as long either way.
        const ok = await verifyPassword(text('password'), credential?.passwordHash ?? DUMMY_PASSWORD_HASH);
        if (!ok || !credential) {
          const failed = new AuthenticationFailed('wrong user name or password');
          failed.unknownName = !credential;
          throw failed;
        }
        return credential.SvcUserId;
      }
      case 'test':
        return (await this.device(text('deviceTag'), channel)).SvcUserId;
      case 'browser': {
        const device = await this.auth.devices.findOne({ deviceIdHash: sha256(text('deviceId')), channels: 'browser' });
        if (!device) throw new AuthenticationFailed('unknown browser');
        return device.SvcUserId;
      }
      case 'android': {
        const device = await this.device(text('deviceTagOpen'), channel);
        if (!device.serverSecret || device.uuid?.toLowerCase() !== text('uuid').toLowerCase())
          throw new AuthenticationFailed('uuid does not match the device');
        const atMs = verifyAndroidSignature(device.serverSecret, text('uuid'), text('deviceTagOpen'), text('signature'));
        if (atMs === null) throw new AuthenticationFailed('bad signature');
        await this.claimProof(device, atMs);
        return device.SvcUserId;
      }
      case 'android_v1':
      case 'ios_v1':
      case 'mobile': {
        const device = await this.device(text('deviceTag'), channel);
        if (
          !device.serverSecret ||
          !verifyCryptotext(device.serverSecret, channel, text('deviceTag'), text('dtsValueString'), text('cryptotext'))
        ) {
          throw new AuthenticationFailed('bad cryptotext');
        }
        await this.claimProof(device, Date.parse(text('dtsValueString')));
        return device.SvcUserId;
      }
      case 'statementGenerator':
      case 'dicBuilder': {
        const user = await this.users.findOne({ _id: text('userId') }, { projection: { _id: 1 } });
        if (!user) throw new AuthenticationFailed('unknown user');
        return user._id;
      }
      case 'chat': {
        const link = await this.auth.chatLinks.findOne({ _id: `${text('transport')}:${text('transportUserId')}` });
        if (!link) throw new AuthenticationFailed('unknown chat identity');
        return link.SvcUserId;
      }
    }
  }

  private async device(deviceTag: string, channel: Channel): Promise<DeviceDocument> {
    const device = await this.auth.devices.findOne({ _id: deviceTag, channels: channel });
    if (!device) throw new AuthenticationFailed('unknown device');
    return device;
  }

  /**
   * Accepts a proof's time stamp once: it must lie within the window around now and be later
   * than the device's last accepted one. The conditional update makes two racing replays of
   * one proof unable to both pass.
   */
  private async claimProof(device: DeviceDocument, atMs: number): Promise<void> {
    if (Math.abs(Date.now() - atMs) > this.config.deviceProofWindowSeconds * 1000)
      throw new AuthenticationFailed('time stamp outside the window');
    const claimed = await this.auth.devices.findOneAndUpdate(
      { _id: device._id, $or: [{ lastProofAt: null }, { lastProofAt: { $lt: atMs } }] },
      { $set: { lastProofAt: atMs } },
    );
    if (!claimed) throw new AuthenticationFailed('replayed proof');
  }
}
