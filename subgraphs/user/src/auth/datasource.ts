import type { Collection, Db } from 'mongodb';
import type { Leased } from '../attempt-slots.js';

/** A user name and password of the internet channel. `_id` is the lower-cased user name. */
interface CredentialDocument {
  _id: string;
  userName: string;
  SvcUserId: string;
  passwordHash: string;
  dtsCreated: Date;
  dtsPasswordChanged: Date;
}

/**
 * A registered device of a user, and the channels it may log in over. `_id` is the device tag.
 * `serverSecret` keys the device's HMAC login proofs; it leaves the service once, at registration.
 */
export interface DeviceDocument {
  _id: string;
  SvcUserId: string;
  channels: string[];
  serverSecret: string | null;
  /** The android device UUID. */
  uuid: string | null;
  /** SHA-256 of a browser's deviceId, which is itself a bearer secret. */
  deviceIdHash: string | null;
  /** The time stamp (ms) of the last accepted proof: a proof must be later, so none is replayed. */
  lastProofAt: number | null;
  deviceData: Record<string, unknown> | null;
  /** Address the device registered from. */
  ipAddress: string | null;
  dtsRegistered: Date;
}

/** A chat transport's user linked to an end user, for the chat channel. `_id` is `<transport>:<transportUserId>`. */
interface ChatLinkDocument {
  _id: string;
  SvcUserId: string;
  dtsLinked: Date;
}

/** A session of an end user, a prospect or an aggregator user. Only the token's SHA-256 hash is stored. */
export interface SessionDocument {
  _id: string;
  tokenHash: string;
  kind: 'user' | 'prospect' | 'aggregator';
  SvcUserId: string | null;
  prospectId: string | null;
  deviceTag: string | null;
  svcAggregatorId: string | null;
  login: string | null;
  tokenType: 'base' | 'confined' | null;
  channel: string;
  dtsCreated: Date;
  dtsExpiry: Date;
  dtsRevoked: Date | null;
}

/**
 * Failed logins of one actor (a user name or a device), the lock they lead to, and the credential
 * checks in flight (`leases`, see auth/lockout.ts). `_id` is the actor for its count across all
 * addresses, and `from:<address group> <actor>` for its count from one address group.
 */
export interface LockoutDocument extends Leased {
  _id: string;
  failures: number;
  dtsLastFailure: Date | null;
  lockedUntil: Date | null;
}

/**
 * An address group an actor logged in from with the right credential: it is still checked when the
 * actor's failures from all addresses reached their bound. `_id` is `<address group> <actor>`;
 * it counts until `dtsExpiry`, and the actor's next login deletes those past it.
 */
export interface KnownSourceDocument {
  _id: string;
  actor: string;
  dtsLastSuccess: Date;
  dtsExpiry: Date;
}

/** An aggregator client (a platform) of the aggregator API. */
interface AggregatorDocument {
  _id: string;
  svcAggregatorId: string;
  name: string;
  dtsCreated: Date;
}

/** A user of an aggregator client, who logs in with `/auth/get-token`. `_id` is the lower-cased login. */
export interface AggregatorUserDocument {
  _id: string;
  login: string;
  svcAggregatorId: string;
  passwordHash: string;
  dtsCreated: Date;
  dtsPasswordChanged: Date;
}

/** The collections of the identity data. */
export interface AuthCollections {
  aggregators: Collection<AggregatorDocument>;
  aggregatorUsers: Collection<AggregatorUserDocument>;
  credentials: Collection<CredentialDocument>;
  chatLinks: Collection<ChatLinkDocument>;
  devices: Collection<DeviceDocument>;
  sessions: Collection<SessionDocument>;
  lockouts: Collection<LockoutDocument>;
  knownSources: Collection<KnownSourceDocument>;
}

export function authCollections(db: Db): AuthCollections {
  return {
    aggregators: db.collection<AggregatorDocument>('aggregators'),
    aggregatorUsers: db.collection<AggregatorUserDocument>('aggregatorUsers'),
    credentials: db.collection<CredentialDocument>('credentials'),
    chatLinks: db.collection<ChatLinkDocument>('chatLinks'),
    devices: db.collection<DeviceDocument>('devices'),
    sessions: db.collection<SessionDocument>('sessions'),
    lockouts: db.collection<LockoutDocument>('lockouts'),
    knownSources: db.collection<KnownSourceDocument>('knownLoginSources'),
  };
}

/** The indexes of every query on these collections: sessions by token hash (unique), user and login; credentials and devices by user; devices by id hash; aggregator users by aggregator; known login sources by actor. */
export async function createAuthIndexes(db: Db): Promise<void> {
  const { credentials, sessions, devices, aggregatorUsers, knownSources } = authCollections(db);
  await knownSources.createIndex({ actor: 1 });
  await sessions.createIndexes([{ key: { tokenHash: 1 }, unique: true }]);
  await sessions.createIndex({ SvcUserId: 1 });
  await sessions.createIndex({ login: 1 });
  await credentials.createIndex({ SvcUserId: 1 });
  await devices.createIndex({ SvcUserId: 1 });
  await devices.createIndex({ deviceIdHash: 1 });
  await aggregatorUsers.createIndex({ svcAggregatorId: 1 });
}
