import { registry } from "@web/core/registry";
import { screenshot } from "./pv_agent_tour_utils";

// A colleague asked the same question before: the clerk's answer comes from the stored checked
// answer at once, labelled with its date; "Neu beantworten" asks the model anyway, and the
// fresh answer appears below.
registry.category("web_tour.tours").add("pv_agent_reuse", {
    url: "/odoo",
    steps: () => [
        {
            trigger: ".o_pv_agent_systray_toggle",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            run: "edit Wie hoch ist die Geringfügigkeitsgrenze 2026?",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_input",
            async run(helpers) {
                this.anchor.focus();
                await helpers.press("Enter");
            },
        },
        {
            trigger: ".o_pv_agent_answer_card .o_pv_agent_reused:contains('Bereits geprüfte Antwort vom')",
            content: "the stored checked answer, labelled with its date",
        },
        {
            trigger: ".o_pv_agent_answer_card:has(.o_pv_agent_reused) .o_pv_agent_answer:contains('551,10')",
            content: "with its text and citations",
        },
        {
            trigger: ".o_pv_agent_answer_card:has(.o_pv_agent_reused):not(:has(.o_pv_agent_reused_original))",
            content: "a colleague's answer: the date only, no link",
        },
        screenshot("panel-reused", ".o_pv_agent_reused"),
        {
            trigger: ".o_pv_agent_reused .o_pv_agent_answer_fresh:contains('Neu beantworten')",
            content: "answer again, without the stored answer",
            run: "click",
        },
        {
            trigger: ".o_pv_agent_panel .o_pv_agent_pending",
        },
        {
            trigger: ".o_pv_agent_answer_card:not(:has(.o_pv_agent_reused)) .o_pv_agent_answer:contains('im Monat')",
            content: "the model's fresh answer, not labelled as reused",
        },
        {
            trigger: ".o_pv_agent_reused .o_pv_agent_reasked",
            content: "the reused one stays, marked as answered again",
        },
    ],
});
