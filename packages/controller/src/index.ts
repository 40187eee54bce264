// @rankd/controller: the controller as a daemon, what `rankd controller` starts. Its one
// other entry, @rankd/controller/data-dir-lock, is what `rankd up` reads of a data
// directory's lock before it starts a controller, without loading the controller.
export { startController, DEFAULT_PORT, type ControllerOptions, type RunningController } from './controller.js';
export { defaultFleetTiming, fleetTimingFromHeartbeat, type FleetTiming } from './nodes/timing.js';
export { DEFAULT_AUDIT_FILE_LIMITS } from './store/audit-file.js';
