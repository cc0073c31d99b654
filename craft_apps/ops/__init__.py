"""What operators ask of a host: ``craft_apps_status``'s document."""
