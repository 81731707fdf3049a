import type { RequestPlugin } from '../../platform/graphql/request-plugin.js';
import { appError, ErrorCode } from '../../platform/contracts/errors.js';
import type { Principal } from '../../platform/contracts/principal.js';
import { keyScopeOf, scopeAllowsField } from '../../platform/security/service-scope.js';
import { rootFieldsOf } from './operation-limits.js';

/** The context the scope check reads. */
interface ScopedContext {
  principal?: Principal;
}

/**
 * Holds a service key to its scope (SERVICE_KEY_SCOPES): an operation that selects a root field
 * its key's scope does not name is refused with 403 FORBIDDEN naming the field, before any
 * subgraph is called. The platform's own services and every other kind of caller pass untouched.
 */
export function serviceScopePlugin(): RequestPlugin<ScopedContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, document, contextValue }) {
          const scope = contextValue.principal ? keyScopeOf(contextValue.principal) : undefined;
          if (!scope || !operation) return;
          const refused = rootFieldsOf(operation, document).find((field) => !scopeAllowsField(scope, field));
          if (refused !== undefined) {
            throw appError(ErrorCode.FORBIDDEN, `This service key's scope does not include ${refused}.`, { httpStatus: 403 });
          }
        },
      };
    },
  };
}
