// Builds the fleet operations (inventory, exec, ping, doctor, shells) and attaches them
// to the agent gateway, so that the controller's wiring stays a few lines.
import type { Logger } from 'pino';
import type { AgentGateway } from '../../gateway/agent-gateway.js';
import type { AgentHandlers } from '../../gateway/agent-handlers.js';
import type { Db } from '../../store/database.js';
import type { EventsRepo } from '../../store/events-repo.js';
import { DoctorService } from '../doctor/doctor-service.js';
import { FleetInventory } from '../inventory/inventory-service.js';
import { InventoryRepo } from '../inventory/inventory-repo.js';
import type { NodeRegistry } from '../../nodes/node-registry.js';
import { PingService } from '../ping/ping-service.js';
import { AgentRequests } from './agent-requests.js';
import { ExecService } from './exec-service.js';
import { ShellRelay } from './shell-relay.js';
import type { UpgradeAccess } from '../../streams/upgrade-access.js';
import { SHELL_PATH } from '@rankd/protocol';

/** Agent replies that AgentRequests routes to their waiters. */
function replyHandlers(requests: AgentRequests): AgentHandlers {
  const reply = requests.handle;
  return {
    'exec.result': reply,
    'fleet.pong': reply,
    'doctor.report': reply,
    'probe.listening': reply,
    'probe.result': reply,
    'fabric.serving': reply,
    'fabric.measured': reply,
  };
}

export interface FleetServices {
  inventory: FleetInventory;
  exec: ExecService;
  ping: PingService;
  doctor: DoctorService;
  /** Request/reply over agent links, for the fabric checks built beside the fleet (checks/). */
  requests: AgentRequests;
  shell: ShellRelay;
  /** Registers the reply handlers and the /v1/shell upgrade route on the gateway. */
  attach(gateway: AgentGateway): void;
  close(): void;
}

export function createFleetServices(deps: {
  db: Db;
  registry: NodeRegistry;
  events: EventsRepo;
  access: UpgradeAccess;
  log: Logger;
}): FleetServices {
  const { db, registry, events, log } = deps;
  const inventory = new FleetInventory(new InventoryRepo(db), registry, events);
  inventory.load();
  const requests = new AgentRequests(registry);
  const shell = new ShellRelay(registry, deps.access, log);
  return {
    inventory,
    exec: new ExecService(inventory, registry, requests, events, log, deps.access.deps.streams),
    ping: new PingService(inventory, registry, requests),
    doctor: new DoctorService(inventory, registry, requests, events, log),
    requests,
    shell,
    attach(gateway) {
      gateway.handle(replyHandlers(requests));
      gateway.handle(shell.handlers());
      gateway.route(SHELL_PATH, shell.upgrade);
    },
    close() {
      shell.close();
      requests.close();
    },
  };
}
