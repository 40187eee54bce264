// How the jobs reach agents: the gateway's live links (controller.ts), or a test's fake.
import type { ControllerMessage } from '@rankd/protocol';

export interface AgentSender {
  /** Sends to the node's agent; false when it has no live link. */
  send(node: string, message: ControllerMessage): boolean;
}
