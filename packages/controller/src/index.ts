export { startController, DEFAULT_PORT, type ControllerOptions, type RunningController } from './controller.js';
export { defaultFleetTiming, fleetTimingFromHeartbeat, type FleetTiming } from './fleet/timing.js';
export { DEFAULT_AUDIT_FILE_LIMITS } from './store/audit-file.js';
