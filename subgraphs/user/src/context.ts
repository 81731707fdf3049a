import type DataLoader from 'dataloader';
import type { Db } from 'mongodb';
import type { ServiceConfig } from '../../../platform/runtime/config-slices.js';
import { loaderByKey } from '../../../platform/graphql/loaders.js';
import type { Notifier } from '../../../platform/messaging/notify.js';
import type { RequestBase } from '../../../platform/graphql/subgraph.js';
import { Alerts } from './alerts/alerts.js';
import { alertSettingsCollection } from './alerts/datasource.js';
import { AggregatorAuth } from './auth/aggregator.js';
import { UserBlocks } from './auth/blocks.js';
import { Lockouts } from './auth/lockout.js';
import { Authenticator } from './auth/login.js';
import { announceThrough, Sessions } from './auth/sessions.js';
import { authCollections } from './auth/datasource.js';
import { usersCollection, type UserDocument } from './profile/datasource.js';
import type { Geocoder } from './geocode/geocoder.js';
import { Confirmations } from './profile/confirmation.js';
import { confirmationsCollection } from './profile/datasource.js';
import { UserUpdater } from './profile/update-user.js';
import { Onboarding } from './onboarding/onboarding.js';
import { Referrals } from './onboarding/referrals.js';

/** What the user subgraph creates once at start and every request shares. */
export interface UserServices {
  db: Db;
  config: ServiceConfig<'user'>;
  notifier: Notifier;
  geocoder: Geocoder;
}

/** The user subgraph's per-request context. */
export interface UserContext extends RequestBase {
  config: ServiceConfig<'user'>;
  /** Users by SvcUserId, batched per request. */
  users: DataLoader<string, UserDocument | null>;
  authenticator: Authenticator;
  sessions: Sessions;
  blocks: UserBlocks;
  aggregatorAuth: AggregatorAuth;
  updater: UserUpdater;
  confirmations: Confirmations;
  alerts: Alerts;
  onboarding: Onboarding;
  geocoder: Geocoder;
}

export function createUserContext(base: RequestBase, services: UserServices): UserContext {
  const { db, config, notifier } = services;
  const users = usersCollection(db);
  const auth = authCollections(db);
  const announce = announceThrough(db);
  const sessions = new Sessions(auth.sessions, users, base.audit, announce);
  const lockouts = new Lockouts(auth.lockouts, auth.knownSources, config, base.logger, base.audit, base.clientIp);
  const referrals = new Referrals(db, base.logger);
  const confirmations = new Confirmations(confirmationsCollection(db), users, notifier, base.logger, referrals);
  return {
    ...base,
    config,
    users: loaderByKey(users),
    sessions,
    blocks: new UserBlocks(users, base.audit, announce),
    authenticator: new Authenticator(auth, users, sessions, lockouts, config, base.logger, base.audit),
    aggregatorAuth: new AggregatorAuth(auth, sessions, lockouts, config, base.logger, base.audit),
    updater: new UserUpdater(users, confirmations, base.logger),
    confirmations,
    alerts: new Alerts(alertSettingsCollection(db)),
    onboarding: new Onboarding(db, sessions, lockouts, referrals, notifier, config, base.logger),
    geocoder: services.geocoder,
  };
}
