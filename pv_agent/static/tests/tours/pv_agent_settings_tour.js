import { registry } from "@web/core/registry";

// An admin opens Settings → PV-Agent, sees the index status, tests the connection and
// queues a reindex; the job shows up in the list of runs.
registry.category("web_tour.tours").add("pv_agent_settings", {
    url: "/odoo/settings#pv_agent",
    steps: () => [
        {
            trigger: ".settings_tab [data-key='pv_agent']",
            content: "PV-Agent has its own settings tab",
            run: "click",
        },
        {
            trigger: ".app_settings_block[data-key='pv_agent'] [name='pv_agent_ollama_url'] input",
            content: "the Ollama URL is editable",
        },
        {
            trigger: ".app_settings_block[data-key='pv_agent']:contains('No index yet')",
            content: "no index yet on a fresh database",
        },
        {
            trigger: "button[name='action_pv_agent_test_connection']",
            content: "test the connection",
            run: "click",
        },
        {
            trigger: ".o_notification:contains('Connection OK')",
            content: "the configured models are there",
        },
        {
            trigger: "button[name='action_pv_agent_reindex']",
            content: "queue a reindex",
            run: "click",
        },
        {
            trigger: ".o_notification:contains('Reindex queued')",
            content: "the reindex is queued, not run in the request",
        },
        {
            trigger: "button[name='action_pv_agent_open_jobs']",
            content: "open the list of runs",
            run: "click",
            expectUnloadPage: false,
        },
        {
            trigger: ".o_list_view .o_data_row:contains('Reindexing')",
            content: "the queued job is listed",
        },
    ],
});
