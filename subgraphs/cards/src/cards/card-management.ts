import type { Collection, Db } from 'mongodb';
import type { AuditTrail } from '../../../../platform/messaging/audit.js';
import { appError, ErrorCode } from '../../../../platform/contracts/errors.js';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { recordEvent } from '../../../../platform/messaging/outbox.js';
import { checkString } from '../../../../platform/security/validate.js';
import { cardsCollection, type CardDocument } from './datasource.js';

/** A user's own cards: rename, make main, turn on and off. */
export class CardManagement {
  private readonly cards: Collection<CardDocument>;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly audit: AuditTrail,
  ) {
    this.cards = cardsCollection(db);
  }

  private async own(SvcUserId: string, SvcCardId: string): Promise<CardDocument> {
    const card = await this.cards.findOne({ _id: SvcCardId, SvcUserId });
    // Another user's card answers as if it did not exist.
    if (!card) throw appError(ErrorCode.NOT_FOUND, `No card ${SvcCardId}.`, { field: 'SvcCardId' });
    return card;
  }

  /** Changes `name` and `isMain` only. The card made main last wins over a racing change. */
  async modify(SvcUserId: string, SvcCardId: string, input: { name?: string | null; isMain?: boolean | null }): Promise<CardDocument> {
    await this.own(SvcUserId, SvcCardId);
    const name = checkString(input.name, 'name', { max: 50, safeText: true });
    const now = new Date();
    const set: Partial<CardDocument> = { dtsUpdated: now };
    if (input.name !== undefined) set.name = name ?? null;
    if (input.isMain === true) {
      set.isMain = true;
      set.dtsMainSet = now;
    } else if (input.isMain === false) {
      set.isMain = false;
    }
    await this.cards.updateOne({ _id: SvcCardId, SvcUserId }, { $set: set });
    if (input.isMain === true) {
      await this.cards.updateMany(
        { SvcUserId, _id: { $ne: SvcCardId }, isMain: true, $or: [{ dtsMainSet: null }, { dtsMainSet: { $lte: now } }] },
        { $set: { isMain: false, dtsUpdated: now } },
      );
      // Racing changes may leave two main cards: keep the one made main last (ties: the greater id).
      const mains = await this.cards.find({ SvcUserId, isMain: true }).sort({ dtsMainSet: -1, _id: -1 }).toArray();
      if (mains.length > 1)
        await this.cards.updateMany({ SvcUserId, _id: { $in: mains.slice(1).map((c) => c._id) } }, { $set: { isMain: false } });
    }
    this.logger.info('card modified', { SvcCardId, fields: Object.keys(set) });
    return this.own(SvcUserId, SvcCardId);
  }

  /** `on` makes the card active, `off` blocked; each change is an event and an audit record. */
  async setStatus(SvcUserId: string, SvcCardId: string, onoff: string): Promise<CardDocument> {
    if (onoff !== 'on' && onoff !== 'off') throw appError(ErrorCode.VALIDATION_FAILED, 'onoff must be on or off.', { field: 'onoff' });
    await this.own(SvcUserId, SvcCardId);
    const status = onoff === 'on' ? 'active' : 'blocked';
    const changed = await this.cards.findOneAndUpdate(
      { _id: SvcCardId, SvcUserId, status: { $ne: status } },
      { $set: { status, isActive: onoff === 'on', dtsUpdated: new Date() } },
      { returnDocument: 'after' },
    );
    if (changed) {
      await recordEvent(
        this.db,
        'card.status',
        { SvcUserId, ...(changed.svcAggregatorId ? { svcAggregatorId: changed.svcAggregatorId } : {}) },
        { SvcCardId, status, isActive: changed.isActive },
      );
      this.logger.info('card status changed', { SvcCardId, status });
      await this.audit.record(
        onoff === 'on' ? 'CARD_TURNED_ON' : 'CARD_TURNED_OFF',
        { type: 'card', id: SvcCardId },
        { SvcUserId, status },
      );
      return changed;
    }
    return this.own(SvcUserId, SvcCardId);
  }
}
