/** An event written in the same write path as the state change it reports, for the relay to publish. */
export interface OutboxEvent {
  _id: string;
  type: string;
  /** Who may see the event: the aggregator or user it concerns. */
  audience: { svcAggregatorId?: string; SvcUserId?: string; svcMerchantId?: string };
  payload: Record<string, unknown>;
  dtsCreated: Date;
  /** Set by the relay once published on the event bus. */
  dtsPublished: Date | null;
  /** Set once forwarded through the graph to the subgraph that consumes it (ach.* events go to compliance). */
  dtsForwarded?: Date | null;
}
