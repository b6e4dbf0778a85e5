import { registry } from "@web/core/registry";

// An admin switches the model server to an OpenAI-compatible one outside the local network:
// the API-key field appears, and a warning that questions would leave the network.
registry.category("web_tour.tours").add("pv_agent_settings_server", {
    url: "/odoo/settings#pv_agent",
    steps: () => [
        {
            trigger: ".settings_tab [data-key='pv_agent']",
            content: "PV-Agent has its own settings tab",
            run: "click",
        },
        {
            trigger: ".app_settings_block[data-key='pv_agent']:not(:has(.alert-warning:visible))",
            content: "no warning for the local test server",
        },
        {
            trigger: ".app_settings_block[data-key='pv_agent'] [name='pv_agent_llm_api'] .o_select_menu input",
            content: "open the server API choice",
            run: "click",
        },
        {
            trigger: ".o-dropdown--menu .o_select_menu_item:contains('OpenAI-compatible')",
            content: "choose the OpenAI-compatible API",
            run: "click",
        },
        {
            trigger: ".app_settings_block[data-key='pv_agent'] [name='pv_agent_llm_api_key'] input[type='password']",
            content: "the API key is typed into a password field, empty",
            run: function () {
                if (this.anchor.value) {
                    throw new Error("the API key field must be empty when the form opens");
                }
                // the key the test stored (test_ui.py) is nowhere in the page
                if (document.documentElement.outerHTML.includes("sk-nie-im-browser")) {
                    throw new Error("the stored API key reached the browser");
                }
            },
        },
        {
            trigger: ".app_settings_block[data-key='pv_agent'] [name='pv_agent_ollama_url'] input",
            content: "a server outside the local network",
            run: "edit https://llm.example.com/v1 && click .app_settings_block[data-key='pv_agent'] h2:contains('Language model')",
        },
        {
            trigger: ".app_settings_block[data-key='pv_agent'] .alert-warning:contains('personal data')",
            content: "the warning says that questions may contain personal data",
        },
        {
            trigger: ".o_form_button_cancel",
            content: "discard: nothing is saved",
            run: "click",
        },
        {
            trigger: ".app_settings_block[data-key='pv_agent']:not(:has(.alert-warning:visible))",
            content: "the saved local URL again, no warning",
        },
    ],
});
