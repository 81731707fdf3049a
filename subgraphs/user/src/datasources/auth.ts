import type { Collection, Db } from 'mongodb';

/** A user name and password of the internet channel. `_id` is the lower-cased user name. */
export interface CredentialDocument {
  _id: string;
  userName: string;
  SvcUserId: string;
  passwordHash: string;
  dtsCreated: Date;
  dtsPasswordChanged: Date;
}

/** A registered device of a user, and the channels it may log in over. `_id` is the device tag. */
export interface DeviceDocument {
  _id: string;
  SvcUserId: string;
  channels: string[];
  deviceData: Record<string, unknown> | null;
  dtsRegistered: Date;
}

/** A session. The token itself is never stored, only its SHA-256 hash. */
export interface SessionDocument {
  _id: string;
  tokenHash: string;
  SvcUserId: string;
  channel: string;
  dtsCreated: Date;
  dtsExpiry: Date;
  dtsRevoked: Date | null;
}

/** Failed logins of one actor (a user name or a device) and the lock they lead to. */
export interface LockoutDocument {
  _id: string;
  failures: number;
  dtsLastFailure: Date;
  lockedUntil: Date | null;
}

/** An aggregator client (a platform) of the aggregator API. */
export interface AggregatorDocument {
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
  devices: Collection<DeviceDocument>;
  sessions: Collection<SessionDocument>;
  lockouts: Collection<LockoutDocument>;
}

export function authCollections(db: Db): AuthCollections {
  return {
    aggregators: db.collection<AggregatorDocument>('aggregators'),
    aggregatorUsers: db.collection<AggregatorUserDocument>('aggregatorUsers'),
    credentials: db.collection<CredentialDocument>('credentials'),
    devices: db.collection<DeviceDocument>('devices'),
    sessions: db.collection<SessionDocument>('sessions'),
    lockouts: db.collection<LockoutDocument>('lockouts'),
  };
}
