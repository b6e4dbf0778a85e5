import { registry } from "@web/core/registry";

// A clerk opens the systray panel, asks, sees the question pending, then the answer with
// its state line and citation chip arriving over the bus, and opens the cited entry.
registry.category("web_tour.tours").add("pv_agent_panel", {
    url: "/odoo",
    steps: () => [
        {
            trigger: ".o_pv_agent_systray_toggle",
            content: "the PV-Agent icon is in the systray",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_empty:contains('Stellen Sie eine Frage')",
            content: "a fresh panel invites a question (German UI for a German-speaking clerk)",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            content: "type a question",
            run: "edit Wie hoch ist die Geringfügigkeitsgrenze 2026?",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            content: "Shift+Enter is a new line",
            async run(helpers) {
                this.anchor.focus();
                await helpers.press("Shift+Enter");
            },
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_empty",
            content: "and does not send",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            content: "Enter sends",
            async run(helpers) {
                this.anchor.focus(); // the Discuss app behind may have taken the focus
                await helpers.press("Enter");
            },
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_question .o_pv_agent_pending",
            content: "the question waits for its answer",
        },
        {
            trigger: ".o_pv_agent_panel:has(.o_pv_agent_pending) .o_pv_agent_input",
            content: "the panel stays usable while the job runs: the next question can be typed",
            run: "edit Und 2025?",
        },
        {
            trigger: ".o_pv_agent_panel:has(.o_pv_agent_pending) .o_pv_agent_send:enabled",
            content: "and could be sent",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            content: "(not this time)",
            run: "clear",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer_card[data-state='answered'] .o_pv_agent_answer:contains('551,10')",
            content: "the answer arrives over the bus",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_answer_card .o_pv_agent_state.alert-success:contains('in den zitierten Einträgen geprüft')",
            content: "its state is explained in one line, in German for this clerk",
        },
        {
            trigger: ".o_pv_agent_panel:not(:has(.o_pv_agent_pending))",
            content: "nothing is pending any more",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_chip[data-entry='pv-sv-01']:contains('2026-01')",
            content: "the citation chip shows id · Stand and opens the entry",
            run: "click",
        },
        {
            trigger: ".o_form_view .o_field_widget[name='entry_id']:contains('pv-sv-01')",
            content: "the entry's form is open",
        },
        {
            trigger: ".o_pv_agent_panel",
            content: "the panel stays open beside it",
        },
    ],
});
