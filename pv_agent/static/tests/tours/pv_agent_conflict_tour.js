import { registry } from "@web/core/registry";
import { screenshot } from "./pv_agent_tour_utils";

// On the sample knowledge base: a question whose sources disagree. The answer shows both
// sides, the state line says so with ⚠, and each side has its citation chip.
registry.category("web_tour.tours").add("pv_agent_conflict", {
    url: "/odoo/action-pv_agent.action_pv_agent_entry",
    steps: () => [
        {
            trigger: ".o_pv_agent_systray_toggle",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            run: "edit Wie hoch ist der AV-Dienstnehmeranteil bei geringem Einkommen 2025?",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_send:enabled",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_pending",
            content: "pending",
        },
        screenshot("panel-pending", ".o_pv_agent_panel .o_pv_agent_pending"),
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_state.o_pv_agent_conflict:contains('⚠ Widerspruch in den Quellen')",
            content: "the conflict is named in the state line",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer li:contains('ÖGK') a[data-pv-entry='pv-sv-12']",
            content: "one side, with its citation linked",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer li:contains('Moore-Vorschau') a[data-pv-entry='pv-sv-13']",
            content: "the other side",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_chip[data-entry='pv-sv-12']:contains('2025-01')",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_chip[data-entry='pv-sv-13']:contains('2025-01')",
        },
        screenshot("panel-answer", ".o_pv_agent_panel .o_pv_agent_chip[data-entry='pv-sv-13']"),
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer a[data-pv-entry='pv-sv-13']",
            content: "a citation in the text opens its entry too",
            run: "click",
        },
        {
            trigger: ".o_form_view .o_field_widget[name='entry_id']:contains('pv-sv-13')",
        },
        screenshot("panel-entry", ".o_form_view .o_field_widget[name='entry_id']:contains('pv-sv-13')"),
    ],
});
