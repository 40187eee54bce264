// Keeps the controller's copy of this node's facts current: a cheap periodic re-read,
// sent only when its hash changes.
import type { Facts } from '@rankd/protocol';
import type { Logger } from 'pino';
import type { ControllerLink } from './controller-link.js';

export interface FactsSource {
  read(): Facts;
  hash(facts: Facts): string;
}

export class FactsPublisher {
  private lastHash: string | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly source: FactsSource,
    private readonly link: ControllerLink,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  /** Facts for a hello; remembers their hash so the next tick sends only changes. */
  forHello(): Facts | undefined {
    try {
      const facts = this.source.read();
      this.lastHash = this.source.hash(facts);
      return facts;
    } catch (err) {
      // Facts readers never throw by contract; if one does, register without facts rather than not at all.
      this.log.error({ err }, 'reading facts failed');
      return undefined;
    }
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  tick(): void {
    if (!this.link.connected) return;
    let facts: Facts;
    try {
      facts = this.source.read();
    } catch (err) {
      this.log.error({ err }, 'reading facts failed');
      return;
    }
    const hash = this.source.hash(facts);
    if (hash === this.lastHash) return;
    if (this.link.send({ type: 'facts', hash, facts })) {
      this.lastHash = hash;
      this.log.info({ hash }, 'facts changed; sent');
    }
  }
}
