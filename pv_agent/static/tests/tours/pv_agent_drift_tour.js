import { registry } from "@web/core/registry";
import { screenshot } from "./pv_agent_tour_utils";

// After a figure changed in a cited entry and the reindex: the clerk sees the flag on the old
// answer, opens the diff, and asks again; the new answer appears below the old one.
registry.category("web_tour.tours").add("pv_agent_drift", {
    url: "/odoo/action-pv_agent.action_pv_agent_conversation",
    steps: () => [
        {
            trigger: ".o_pv_agent_systray_toggle",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_answer_card[data-drift='changed'] .o_pv_agent_drift:contains('Quelle geändert')",
            content: "the answer is flagged: its source changed",
        },
        {
            trigger: ".o_pv_agent_answer_card[data-drift='changed'] .o_pv_agent_drift_toggle",
            content: "show the change",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_diff .o_pv_agent_diff_del:contains('551,10 € | 551,10 €')",
            content: "the old line",
        },
        {
            trigger: ".o_pv_agent_diff .o_pv_agent_diff_add:contains('556,81')",
            content: "and the new one",
        },
        screenshot("panel-drift", ".o_pv_agent_diff .o_pv_agent_diff_add"),
        {
            trigger: ".o_pv_agent_answer_card[data-drift='changed'] .o_pv_agent_reanswer",
            content: "answer again against the current knowledge base",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_pending",
        },
        {
            trigger: ".o_pv_agent_answer_card[data-drift=''] .o_pv_agent_answer:contains('556,81')",
            content: "the new answer, without a flag",
        },
        {
            trigger: ".o_pv_agent_answer_card[data-drift='changed'] .o_pv_agent_reasked",
            content: "the old one stays, marked as answered again",
        },
    ],
});
