import type { Db, Filter } from 'mongodb';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import { checkPage, readPage } from '../../../../platform/graphql/paging.js';
import {
  checkDeliveryStatus,
  deliveriesCollection,
  enableEndpoint,
  type Deliveries,
  type DeliveryDocument,
} from '../../../../platform/messaging/deliveries.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import { webhookConfigsCollection } from './datasource.js';
import { configureWebhook } from './webhook-config.js';

/** An aggregator's card-authorization webhook: its configuration, and the log of advices delivered to it. */
export class CardWebhooks {
  constructor(
    private readonly db: Db,
    private readonly deliveries: Deliveries,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
    private readonly allowInternal: boolean,
  ) {}

  /** Sets the aggregator's webhook (a new secret on first configuration or on request). */
  configure(svcAggregatorId: string, input: Parameters<typeof configureWebhook>[4]) {
    return configureWebhook(this.db, this.logger, this.audit, svcAggregatorId, input, this.allowInternal);
  }

  /** Enables the aggregator's webhook after a run of failures disabled it, and resumes its paused advices. */
  async enable(svcAggregatorId: string): Promise<void> {
    await enableEndpoint(webhookConfigsCollection(this.db), svcAggregatorId);
    await this.deliveries.resume({ svcAggregatorId });
  }

  /** Sends a failed advice again; NOT_FOUND for another aggregator's. */
  async resend(svcAggregatorId: string, deliveryId: string): Promise<DeliveryDocument> {
    const delivery = await deliveriesCollection(this.db).findOne({ _id: deliveryId });
    if (!delivery || delivery.svcAggregatorId !== svcAggregatorId)
      throw appError(ErrorCode.NOT_FOUND, `Delivery ${deliveryId} does not exist.`, { field: 'deliveryId' });
    return this.deliveries.resend(deliveryId);
  }

  /** The aggregator's advice deliveries, newest first, a page at a time. */
  deliveriesOf(svcAggregatorId: string, args: { status?: string | null; numberOfRecords?: number | null; skipRecords?: number | null }) {
    const filter: Filter<DeliveryDocument> = { svcAggregatorId };
    const status = checkDeliveryStatus(args.status);
    if (status) filter.status = status;
    return readPage(deliveriesCollection(this.db).find(filter).sort({ dtsCreated: -1, _id: -1 }), checkPage(args));
  }
}
