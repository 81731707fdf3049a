import type DataLoader from 'dataloader';
import type { Db } from 'mongodb';
import type { Config } from '../../../platform/config.js';
import { loaderByKey } from '../../../platform/loaders.js';
import type { RequestBase } from '../../../platform/subgraph.js';
import { Authenticator } from './auth/login.js';
import { authCollections } from './datasources/auth.js';
import { usersCollection, type UserDocument } from './datasources/users.js';

/** The user subgraph's per-request context. */
export interface UserContext extends RequestBase {
  config: Config;
  /** Users by SvcUserId, batched per request. */
  users: DataLoader<string, UserDocument | null>;
  authenticator: Authenticator;
}

export function createUserContext(base: RequestBase, db: Db, config: Config): UserContext {
  const users = usersCollection(db);
  return {
    ...base,
    config,
    users: loaderByKey(users),
    authenticator: new Authenticator(authCollections(db), users, config, base.logger),
  };
}
