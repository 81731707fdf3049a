import { readFileSync } from 'node:fs';
import { buildSchema, isEnumType, type GraphQLField, type GraphQLInputField } from 'graphql';
import { describe, expect, it } from 'vitest';
import { API_SCHEMA_PATH } from '../../schema/compose.js';
import { PAYMENT_LINK_STATUSES } from '../../subgraphs/payments/src/payment-links/datasource.js';
import { FIELD_CODES } from '../../subgraphs/payments/src/payment-links/payment-links.js';
import { LOGO_TYPES } from '../../subgraphs/payments/src/merchants/merchants.js';
import { ACH_PAYMENT_STATUSES } from '../../subgraphs/payments/src/ach/datasource.js';
import { TRANSACTION_STATES } from '../../subgraphs/payments/src/accounts/transactions-datasource.js';
import { CHANNEL_REQUIREMENTS, DEVICE_CHANNELS } from '../../subgraphs/user/src/auth/login.js';
import { SEGMENTS } from '../../subgraphs/user/src/profile/datasource.js';
import { DOCUMENT_TYPES, PRE_SEGMENTS } from '../../subgraphs/user/src/onboarding/onboarding.js';
import { ALERT_CATALOGUE } from '../../subgraphs/user/src/alerts/alerts.js';
import { CARD_DECIDERS } from '../../subgraphs/cards/src/authorization/datasource.js';
import { DEFAULT_STRATEGIES } from '../../subgraphs/cards/src/webhooks/datasource.js';
import { ACTOR_KINDS } from '../../subgraphs/compliance/src/audit/audit-log.js';
import { DOCUMENT_VIEWS, VIEWS } from '../../subgraphs/compliance/src/kyc/kyc.js';

// A closed set is an enum whose values are the specs' own spellings, which the REST adapter passes on unchanged.
const api = buildSchema(readFileSync(API_SCHEMA_PATH, 'utf8'));
const valuesOf = (name: string) => {
  const type = api.getType(name);
  if (!isEnumType(type)) throw new Error(`${name} is not an enum of the API schema`);
  // The committed API schema is sorted: values are compared as sets.
  return type
    .getValues()
    .map((value) => value.name)
    .sort();
};
const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

/** `Type.field` of an object type, or `Type.field(argument)`: its type as SDL writes it. */
const typeOf = (path: string) => {
  const match = /^(\w+)\.(\w+)(?:\((\w+)\))?$/.exec(path);
  if (!match) throw new Error(`not a field path: ${path}`);
  const [, typeName = '', fieldName = '', argument] = match;
  const type = api.getType(typeName);
  if (!type || !('getFields' in type)) throw new Error(`${typeName} has no fields`);
  const field: GraphQLField<unknown, unknown> | GraphQLInputField | undefined = type.getFields()[fieldName];
  if (!field) throw new Error(`${typeName} has no field ${fieldName}`);
  if (argument === undefined) return String(field.type);
  const arg = 'args' in field ? field.args.find((a) => a.name === argument) : undefined;
  if (!arg) throw new Error(`${path} has no such argument`);
  return String(arg.type);
};

describe('closed sets in the API schema', () => {
  it('spell each value as the specs and the stored documents do', () => {
    expect(valuesOf('PaymentLinkStatus')).toEqual([...PAYMENT_LINK_STATUSES].sort());
    expect(valuesOf('CardStatus')).toEqual(['active', 'blocked'].sort());
    expect(valuesOf('AchPaymentStatus')).toEqual(['Processing', 'Settled', 'Returned'].sort());
    expect(valuesOf('AchPaymentStatus')).toEqual(sorted(ACH_PAYMENT_STATUSES));
    expect(valuesOf('ApplicationStatus')).toEqual(['pending_step_up', 'completed'].sort());
    expect(valuesOf('DeliveryStatus')).toEqual(['pending', 'delivered', 'failed', 'paused'].sort());
  });

  it('spell the other closed sets as the specs and the subgraphs that check them do', () => {
    // The end-user spec: "one of: internet, android, browser, statementGenerator, dicBuilder, chat, android_v1, ios_v1, mobile, test".
    expect(valuesOf('LoginChannel')).toEqual(sorted(Object.keys(CHANNEL_REQUIREMENTS)));
    expect(valuesOf('LoginChannel')).toEqual(
      sorted(['internet', 'android', 'browser', 'statementGenerator', 'dicBuilder', 'chat', 'android_v1', 'ios_v1', 'mobile', 'test']),
    );
    expect(valuesOf('LoginChannel')).toEqual(expect.arrayContaining([...DEVICE_CHANNELS]));
    expect(valuesOf('Segment')).toEqual(sorted(SEGMENTS));
    expect(valuesOf('Segment')).toEqual(expect.arrayContaining(Object.values(PRE_SEGMENTS)));
    expect(valuesOf('AlertType')).toEqual(sorted(ALERT_CATALOGUE.map((alert) => alert.alertTypeId)));
    // The end-user spec: "values seen: general, summaryReports".
    expect(valuesOf('AlertCategory')).toEqual(sorted(ALERT_CATALOGUE.map((alert) => alert.category)));
    expect(valuesOf('AlertCategory')).toEqual(['general', 'summaryReports']);
    expect(valuesOf('GeocodePrecision')).toEqual(sorted(['postalCode', 'city']));
    expect(valuesOf('ProspectDocumentType')).toEqual(sorted(DOCUMENT_TYPES));
    // The aggregator spec: "type string: base or confined".
    expect(valuesOf('AggregatorTokenType')).toEqual(sorted(['base', 'confined']));
    expect(valuesOf('NotificationChannel')).toEqual(sorted(['email', 'webhook']));

    expect(valuesOf('CardSwitch')).toEqual(sorted(['on', 'off']));
    expect(valuesOf('DeliveryOutcome')).toEqual(sorted(['delivered', 'failed']));
    expect(valuesOf('CardMessageActionType')).toEqual(sorted(['request', 'advice']));
    expect(valuesOf('CardDecisionSource')).toEqual(sorted(CARD_DECIDERS));
    expect(valuesOf('DefaultStrategy')).toEqual(sorted(DEFAULT_STRATEGIES));

    expect(valuesOf('AccountType')).toEqual(sorted(['checking', 'savings']));
    expect(valuesOf('TransactionState')).toEqual(sorted(TRANSACTION_STATES));
    expect(valuesOf('EntryDirection')).toEqual(sorted(['debit', 'credit']));
    expect(valuesOf('PaymentLinkFieldCode')).toEqual(sorted(FIELD_CODES));
    expect(valuesOf('StatusInitiatorType')).toEqual(sorted(['merchant', 'customer', 'system']));
    expect(valuesOf('PaymentType')).toEqual(sorted(['card', 'ach']));
    expect(valuesOf('LogoType')).toEqual(sorted(LOGO_TYPES));

    expect(valuesOf('ActorKind')).toEqual(sorted(ACTOR_KINDS));
    expect(valuesOf('RestrictionDecisionSource')).toEqual(sorted(['procedural', 'transactionType', 'restriction', 'default']));
    expect(valuesOf('ApplicationOutcome')).toEqual(sorted(['Approved', 'Declined']));
    expect(valuesOf('DocumentView')).toEqual(sorted(VIEWS));
    expect(valuesOf('CustomerType')).toEqual(sorted(['individual', 'business']));
    expect(valuesOf('KycDocumentType')).toEqual(sorted(Object.keys(DOCUMENT_VIEWS)));
    expect(valuesOf('AchActivityKind')).toEqual(sorted(['debit', 'return']));
  });

  it('type the status fields by their enums', () => {
    expect(typeOf('Card.status')).toBe('CardStatus!');
    expect(typeOf('PaymentLink.status')).toBe('PaymentLinkStatus!');
    expect(typeOf('StatusChange.status')).toBe('PaymentLinkStatus!');
    expect(typeOf('AchPayment.status')).toBe('AchPaymentStatus!');
    expect(typeOf('Application.status')).toBe('ApplicationStatus!');
    expect(typeOf('Delivery.status')).toBe('DeliveryStatus!');
    expect(typeOf('CardWebhookDelivery.status')).toBe('DeliveryStatus!');
  });

  it('type the other closed fields, outputs and inputs, by their enums', () => {
    const expected: Record<string, string> = {
      'LoginResult.segment': 'Segment',
      'User.segment': 'Segment',
      'ProspectDataResult.segment': 'Segment!',
      'DeviceRegistrationResult.segment': 'Segment',
      'DeviceRegistrationResult.channel': 'LoginChannel!',
      'Alert.alertTypeId': 'AlertType!',
      'Alert.category': 'AlertCategory',
      'GeocodeCandidate.precision': 'GeocodePrecision!',
      'ProspectImageInput.documentType': 'ProspectDocumentType',
      'ProspectImageResult.documentType': 'ProspectDocumentType!',
      'AggregatorTokenResult.type': 'AggregatorTokenType!',
      'AggregatorToken.type': 'AggregatorTokenType!',
      'AggregatorViewer.tokenType': 'AggregatorTokenType!',

      'Mutation.setCardStatus(onoff)': 'CardSwitch!',
      'DeliveryAttempt.outcome': 'DeliveryOutcome!',
      'CardAuthorization.actionType': 'CardMessageActionType!',
      'CardMessageInput.actionType': 'CardMessageActionType',
      'CardAuthorization.decidedBy': 'CardDecisionSource!',
      'CardAuthorizationResult.decidedBy': 'CardDecisionSource!',
      'WebhookConfigInput.defaultStrategy': 'DefaultStrategy!',
      'WebhookConfigResult.defaultStrategy': 'DefaultStrategy!',
      'CondorCardResult.status': 'CardStatus!',

      'Account.type': 'AccountType!',
      'AchInstruction.accountType': 'AccountType',
      'AchInstructionInput.accountType': 'AccountType',
      'Transaction.transactionState': 'TransactionState!',
      'TransactionFilter.transactionState': 'TransactionState',
      'FundsTransaction.type': 'EntryDirection!',
      'AchInstruction.transactionType': 'EntryDirection',
      'CardTransactionInput.direction': 'EntryDirection!',
      'Merchant.linkDelivery': 'NotificationChannel!',
      'MerchantInput.linkDelivery': 'NotificationChannel',
      'Delivery.kind': 'NotificationChannel!',
      'PaymentLinkField.code': 'PaymentLinkFieldCode!',
      'PaymentLinkFieldInput.code': 'PaymentLinkFieldCode',
      'StatusChange.initiatorType': 'StatusInitiatorType!',
      'PaymentLink.availablePaymentType': '[PaymentType!]!',
      'PaymentLinkInput.availablePaymentType': '[PaymentType!]',
      'RefundTransaction.paymentType': 'PaymentType!',
      'RefundFilter.paymentType': 'PaymentType',
      'RefundInput.paymentType': 'PaymentType',
      'RefundTransaction.status': 'PaymentLinkStatus!',
      'RefundFilter.status': 'PaymentLinkStatus',
      'AchResult.status': 'AchPaymentStatus',
      'LogoInput.type': 'LogoType',

      'AuditRecord.actorKind': 'ActorKind!',
      'RestrictionDecision.decidedBy': 'RestrictionDecisionSource!',
      'Application.outcome': 'ApplicationOutcome',
      'EntityApplication.outcome': 'ApplicationOutcome',
      'EntityApplication.requiredViews': '[DocumentView!]!',
      'EntityApplication.linkedViews': '[DocumentView!]!',
      'DocumentAttachmentInput.view': 'DocumentView',
      'CustomerInitInput.type': 'CustomerType',
      'CustomerInitResult.type': 'CustomerType!',
      'DocumentGenerateInput.documentType': 'KycDocumentType',
      'GeneratedDocument.documentType': 'KycDocumentType!',
      'AchActivityInput.kind': 'AchActivityKind!',
      'IouTransactionInput.kind': 'IouKind',
      'Query.paymentLinks(status)': 'PaymentLinkStatus',
      'Query.deliveries(status)': 'DeliveryStatus',
      'Query.cardWebhookDeliveries(status)': 'DeliveryStatus',
    };
    expect(Object.fromEntries(Object.keys(expected).map((path) => [path, typeOf(path)]))).toEqual(expected);
  });

  it('keep String where an enum would change a refusal clients are told, or cannot spell the values', () => {
    // Each of these says why in its SDL description: a spec's own error code, a test-pinned VALIDATION_FAILED, a value that is no enum name, or data.
    const kept = [
      'LoginInput.channel',
      'ProspectDataInput.preSegment',
      'DeviceRegistrationInput.preSegment',
      'AddressInput.accountType',
      'AlertInput.alertTypeId',
      // actorKind: the audit forwarding parks an event its receiver refuses with VALIDATION_FAILED; a coercion error would stall it.
      'SandboxInput.sandBoxCases',
      'AuditRecordInput.actorKind',
      'CardAuthorization.messageType',
      'CardMessageInput.messageType',
      'Transaction.txnType',
      'TransactionTypeRule.name',
      'Restriction.txnTypes',
      'TransactionProposalInput.sourceAccountType',
      'Delivery.eventType',
      'CardWebhookDelivery.eventType',
      'ProspectImageInput.contentType',
      'DocumentUploadInput.contentType',
    ];
    for (const path of kept) expect(typeOf(path).replace(/[[\]!]/g, ''), path).toBe('String');
  });
});
