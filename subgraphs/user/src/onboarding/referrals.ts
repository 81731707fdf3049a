import { MongoServerError, type Collection, type Db } from 'mongodb';
import type { Logger } from '../../../../platform/runtime/logger.js';
import { authCollections, type DeviceDocument } from '../auth/datasource.js';
import { usersCollection, type UserDocument } from '../profile/datasource.js';
import { prospectCollections, type ReferralClaimDocument, type ReferralKeyDocument, type ReferralTaskDocument } from './datasource.js';

const DUPLICATE_KEY = 11000;

/** What a referrer is compared by; users stored before the lists existed have none. */
type ReferrerContacts = Pick<UserDocument, '_id' | 'email' | 'mobile' | 'phoneNumber'> &
  Partial<Pick<UserDocument, 'emails' | 'phoneNumbers'>>;

/**
 * An email address as one mailbox: lower case, without a `+tag` in the local part (most providers
 * deliver `dana+2@x` to `dana@x`, so the tag would make one person many).
 */
function mailboxOf(email: string): string {
  const lower = email.trim().toLowerCase();
  const at = lower.lastIndexOf('@');
  const local = lower.slice(0, at);
  const plus = local.indexOf('+');
  return `${plus >= 0 ? local.slice(0, plus) : local}${lower.slice(at)}`;
}

/** A mobile number as digits only, without a leading `+` or international `00`. */
function lineOf(mobile: string): string {
  return mobile.replace(/\D/g, '').replace(/^00/, '');
}

/** The device a registration came from: an android's uuid where it has one, else its device tag. */
function deviceKeyOf(device: Pick<DeviceDocument, '_id' | 'uuid'>): string {
  return device.uuid ? `uuid:${device.uuid.toLowerCase()}` : `tag:${device._id}`;
}

/**
 * Referral bonuses. A registration with a referral code only records a claim; the task that pays
 * the bonus is created when the referred user has confirmed both an email and a mobile number
 * (docs/security.md: Referral bonuses), at most once per referred person: the confirmed mailbox,
 * the confirmed mobile line and the registration device each claim a key in `referralKeys`
 * (its `_id`, so the database's own uniqueness decides a race), and a task is written only when
 * every key is the referred user's own. A referral of oneself (the referrer's own email, mobile
 * or device) creates none.
 */
export class Referrals {
  private readonly claims: Collection<ReferralClaimDocument>;
  private readonly keys: Collection<ReferralKeyDocument>;
  private readonly tasks: Collection<ReferralTaskDocument>;
  private readonly users: Collection<UserDocument>;
  private readonly devices: Collection<DeviceDocument>;

  constructor(
    db: Db,
    private readonly logger: Logger,
  ) {
    ({ referralClaims: this.claims, referralKeys: this.keys, referralTasks: this.tasks } = prospectCollections(db));
    this.users = usersCollection(db);
    this.devices = authCollections(db).devices;
  }

  /** Records that `referred` registered on `device` with `referrer`'s code; nothing is paid yet. */
  async claim(referred: string, referrer: string, referralCode: string, device: Pick<DeviceDocument, '_id' | 'uuid'>): Promise<void> {
    await this.claims.insertOne({
      _id: referred,
      referrerSvcUserId: referrer,
      referralCode,
      deviceKey: deviceKeyOf(device),
      dtsCreated: new Date(),
    });
  }

  /**
   * Called after each confirmation of an email or mobile number: once both are confirmed, turns
   * the user's claim (if any) into a pending task, or drops it when the person, the line, the
   * mailbox or the device was referred before or is the referrer's own. Safe to call twice at
   * once: the keys and the task's id admit one.
   */
  async confirmed(user: UserDocument): Promise<void> {
    if (!user.isEmailConfirmed || !user.isMobilePhoneConfirmed || !user.email || !user.mobile) return;
    const claim = await this.claims.findOne({ _id: user._id });
    if (!claim) return;
    const mailbox = mailboxOf(user.email);
    const line = lineOf(user.mobile);
    const referrer = await this.users.findOne<ReferrerContacts>(
      { _id: claim.referrerSvcUserId },
      { projection: { _id: 1, email: 1, mobile: 1, phoneNumber: 1, emails: 1, phoneNumbers: 1 } },
    );
    if (!referrer || referrer._id === user._id || (await this.isOwn(referrer, mailbox, line, claim.deviceKey))) {
      this.logger.info('referral dropped', {
        SvcUserId: user._id,
        reason: referrer ? 'the referrer referred themself' : 'the referrer is gone',
      });
      await this.claims.deleteOne({ _id: user._id });
      return;
    }
    for (const key of [`mailbox:${mailbox}`, `line:${line}`, `device:${claim.deviceKey}`]) {
      if (!(await this.claimKey(key, user._id))) {
        // Referred before: this person gets no second bonus, and takes none of the keys.
        await this.keys.deleteMany({ referredSvcUserId: user._id });
        await this.claims.deleteOne({ _id: user._id });
        this.logger.info('referral dropped', { SvcUserId: user._id, reason: 'the person was referred before' });
        return;
      }
    }
    try {
      await this.tasks.insertOne({
        _id: `ref_${user._id}`,
        referrerSvcUserId: claim.referrerSvcUserId,
        referralCode: claim.referralCode,
        referredSvcUserId: user._id,
        status: 'pending',
        dtsCreated: new Date(),
      });
      this.logger.info('referral task created', { SvcUserId: user._id, referrerSvcUserId: claim.referrerSvcUserId });
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
    }
    await this.claims.deleteOne({ _id: user._id });
  }

  /** Takes `key` for `referred`; true when it is (now or already) theirs. */
  private async claimKey(key: string, referred: string): Promise<boolean> {
    try {
      await this.keys.insertOne({ _id: key, referredSvcUserId: referred, dtsClaimed: new Date() });
      return true;
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
      return (await this.keys.findOne({ _id: key }))?.referredSvcUserId === referred;
    }
  }

  /** Whether the mailbox, the line or the device is the referrer's own. */
  private async isOwn(referrer: ReferrerContacts, mailbox: string, line: string, deviceKey: string): Promise<boolean> {
    const { email, emails = [], mobile, phoneNumber, phoneNumbers = [] } = referrer;
    const mailboxes = [email, ...emails].filter((e): e is string => Boolean(e)).map(mailboxOf);
    const lines = [mobile, phoneNumber, ...phoneNumbers].filter((m): m is string => Boolean(m)).map(lineOf);
    if (mailboxes.includes(mailbox) || lines.includes(line)) return true;
    const devices = await this.devices.find({ SvcUserId: referrer._id }, { projection: { _id: 1, uuid: 1 } }).toArray();
    return devices.some((device) => deviceKeyOf(device) === deviceKey);
  }
}
