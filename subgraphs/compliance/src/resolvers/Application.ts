import type { ApplicationResolvers, GeneratedDocumentResolvers, UploadedDocumentResolvers } from '../__generated__/resolvers-types.js';
import { globalId, ownKey } from '../../../../platform/graphql/global-id.js';
import { applicationView } from '../kyc/kyc.js';
import { isInternalService } from '../../../../platform/security/service-scope.js';

export const Application: ApplicationResolvers = {
  id: (parent) => globalId('Application', parent.applicationId),
  __resolveReference: async (reference, { applications, principal }) => {
    // By its own key, or by its global id (node(id:), a client refetching the record).
    const applicationId = ownKey(reference, 'Application', 'applicationId');
    if (applicationId === null) return null;
    const application = await applications.load(applicationId);
    const visible =
      application &&
      (isInternalService(principal) || (principal.kind === 'aggregator' && principal.svcAggregatorId === application.svcAggregatorId));
    return visible ? applicationView(application) : null;
  },
};

export const GeneratedDocument: GeneratedDocumentResolvers = {
  id: (document) => globalId('GeneratedDocument', document.documentId),
};

export const UploadedDocument: UploadedDocumentResolvers = {
  id: (document) => globalId('UploadedDocument', document.documentId),
};
