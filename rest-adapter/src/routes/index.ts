import { CARD_ROUTES } from './cards.js';
import { COMPLIANCE_ROUTES } from './compliance.js';
import { IDENTITY_ROUTES } from './identity.js';
import { PAYMENT_ROUTES } from './payments.js';
import type { Route } from './route.js';

export {
  changesState,
  codesOfStatus,
  documentedStatuses,
  JSON_BODY_LIMIT_BYTES,
  RouteInputError,
  statusOfCode,
  type Route,
  type UploadedFile,
} from './route.js';

/** The routes by the part of the domain (and subgraph) that serves them; the reference groups them so. */
export const ROUTE_GROUPS: ReadonlyArray<{ name: string; routes: Route[] }> = [
  { name: 'Identity', routes: IDENTITY_ROUTES },
  { name: 'Cards', routes: CARD_ROUTES },
  { name: 'Payments', routes: PAYMENT_ROUTES },
  { name: 'Compliance', routes: COMPLIANCE_ROUTES },
];

/** Every route of the adapter. */
export const ROUTES: Route[] = ROUTE_GROUPS.flatMap((group) => group.routes);
