// Request/reply over agent links, for every fleet operation (exec, ping, doctor, probes).
//
// A request is a frame with a fresh id; its reply is the frame of the expected type with
// the same id from the same node. A request ends in exactly one way: the reply, the
// deadline, its caller abandoning it, or the loss of the link it was sent on (checked on a short timer, because a
// closed socket is noticed long before the node's TTL runs out).
import { randomUUID } from 'node:crypto';
import { FleetErrorCode, RankdError } from '@rankd/protocol';
import type { AgentMessage, ControllerMessage, WithoutId } from '@rankd/protocol';
import type { AuthenticatedAgent } from '../../gateway/agent-handlers.js';
import type { AgentLink, NodeRegistry } from '../../nodes/node-registry.js';

export type Reply = { type: string; id?: string } & Record<string, unknown>;

interface Pending {
  node: string;
  link: AgentLink;
  replyType: string;
  resolve: (reply: Reply) => void;
  reject: (err: RankdError) => void;
  timer: NodeJS.Timeout;
}

const LINK_CHECK_MS = 200;

export class AgentRequests {
  private readonly pending = new Map<string, Pending>();
  private linkTimer: NodeJS.Timeout | null = null;

  constructor(private readonly registry: NodeRegistry) {}

  /** A fresh request id; callers that need it before sending (PTY sessions) take one here. */
  static newId(): string {
    return randomUUID();
  }

  /**
   * Sends `message` to `node` under a new id and resolves with the reply of `replyType`.
   * Rejects with RANKD_AGENT_UNREACHABLE when the node is not connected, its link drops,
   * or no reply comes within `timeoutMs`. `id` is given by callers that may cancel the request.
   */
  request<R extends Reply>(
    node: string,
    message: WithoutId<ControllerMessage>,
    replyType: string,
    timeoutMs: number,
    id = AgentRequests.newId(),
  ): Promise<R> {
    const link = this.registry.link(node);
    if (!link) return Promise.reject(unreachable(node, 'its agent is not connected'));
    return new Promise<R>((resolve, reject) => {
      const timer = setTimeout(
        () => this.settle(id, null, unreachable(node, `no ${replyType} within ${Math.round(timeoutMs)} ms`)),
        timeoutMs,
      );
      this.pending.set(id, { node, link, replyType, resolve: resolve as (r: Reply) => void, reject, timer });
      if (!link.send({ ...message, id })) {
        this.settle(id, null, unreachable(node, 'its agent is not connected'));
        return;
      }
      this.linkTimer ??= setInterval(() => this.checkLinks(), LINK_CHECK_MS);
    });
  }

  /** Sends a frame that has no reply (fabric.stop); false when the node is not connected. */
  notify(node: string, message: ControllerMessage): boolean {
    return this.registry.link(node)?.send(message) ?? false;
  }

  /** The gateway handler for every reply type. Replies nobody waits for (late, foreign) are dropped. */
  readonly handle = (conn: AuthenticatedAgent, message: AgentMessage): void => {
    const id = message.id;
    if (id === undefined) return;
    const p = this.pending.get(id);
    if (!p || p.node !== conn.name || p.replyType !== message.type) return;
    this.settle(id, message, null);
  };

  /**
   * Stops waiting for request `id`: it rejects with `err`, and a reply that still comes is
   * dropped. Returns false when it had already ended. Ending the work on the node is the caller's.
   */
  abandon(id: string, err: RankdError): boolean {
    if (!this.pending.has(id)) return false;
    this.settle(id, null, err);
    return true;
  }

  /** The link a pending request was sent on, to reach the same agent about it. */
  linkOf(id: string): AgentLink | undefined {
    return this.pending.get(id)?.link;
  }

  close(): void {
    for (const id of [...this.pending.keys()])
      this.settle(id, null, new RankdError(FleetErrorCode.AgentUnreachable, 'the controller is shutting down'));
  }

  private settle(id: string, reply: Reply | null, err: RankdError | null): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (this.pending.size === 0 && this.linkTimer) {
      clearInterval(this.linkTimer);
      this.linkTimer = null;
    }
    if (reply) p.resolve(reply);
    else p.reject(err!);
  }

  private checkLinks(): void {
    for (const [id, p] of this.pending) {
      if (this.registry.link(p.node) !== p.link)
        this.settle(id, null, unreachable(p.node, 'the connection to its agent was lost'));
    }
  }
}

function unreachable(node: string, why: string): RankdError {
  return new RankdError(FleetErrorCode.AgentUnreachable, `node ${node}: ${why}`, { node });
}
