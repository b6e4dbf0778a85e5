/**
 * A tour step that asks the test for a screenshot (saved to docs/screenshots when the tests
 * run with PV_AGENT_SCREENSHOTS=<folder>; otherwise only a log line), then lets it be taken.
 */
export function screenshot(name, trigger) {
    return {
        trigger,
        content: `screenshot ${name}`,
        async run() {
            await new Promise((resolve) => setTimeout(resolve, 400)); // let animations settle
            console.log(`pv_agent:screenshot:${name}`);
            await new Promise((resolve) => setTimeout(resolve, 800));
        },
    };
}
