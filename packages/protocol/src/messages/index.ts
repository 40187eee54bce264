// The two dispatch maps of the agent gateway, one per direction.
import { defineMessages } from '../codec.js';
import { ErrorMessage, FactsUpdate, Heartbeat, Hello, Welcome } from './session.js';

export * from './envelope.js';
export * from './session.js';

/** Frames the controller accepts from an agent. */
export const AgentMessages = defineMessages([Hello, Heartbeat, FactsUpdate, ErrorMessage]);

/** Frames the agent accepts from the controller. */
export const ControllerMessages = defineMessages([Welcome, ErrorMessage]);
