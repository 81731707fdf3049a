import { CARD_ROUTES } from './cards.js';
import { COMPLIANCE_ROUTES } from './compliance.js';
import { IDENTITY_ROUTES } from './identity.js';
import { PAYMENT_ROUTES } from './payments.js';
import type { Route } from './route.js';

export { DEFAULT_STATUSES, RouteInputError, type Credential, type Route, type RouteInput } from './route.js';

/** Every route of the adapter, by the subgraph that serves it. */
export const ROUTES: Route[] = [...IDENTITY_ROUTES, ...CARD_ROUTES, ...PAYMENT_ROUTES, ...COMPLIANCE_ROUTES];
