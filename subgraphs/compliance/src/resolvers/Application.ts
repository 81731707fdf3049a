import type { ApplicationResolvers } from '../__generated__/resolvers-types.js';
import { globalId } from '../../../../platform/graphql/global-id.js';
import { applicationView } from '../kyc/kyc.js';

export const Application: ApplicationResolvers = {
  id: (parent) => globalId('Application', parent.applicationId),
  __resolveReference: async ({ applicationId }, { applications, principal }) => {
    const application = await applications.load(applicationId);
    const visible = application && (principal.kind === 'service' || (principal.kind === 'aggregator' && principal.svcAggregatorId === application.svcAggregatorId));
    return visible ? applicationView(application) : null;
  },
};
