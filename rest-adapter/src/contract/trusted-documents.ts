import { trustedDocumentOf, type TrustedDocument } from '../../../platform/graphql/persisted-queries.js';
import { DASHBOARD_DOCUMENTS } from '../../../web/operations.js';
import { loadOperation } from '../operations.js';
import { ROUTES } from '../routes/index.js';

/** The project's own documents: every operation of the REST adapter's routes and every document of the dashboard. */
export function builtInTrustedDocuments(): TrustedDocument[] {
  const bodies = new Set([...ROUTES.map((route) => loadOperation(route.operation)), ...Object.values(DASHBOARD_DOCUMENTS)]);
  return [...bodies].map(trustedDocumentOf);
}
