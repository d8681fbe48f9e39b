from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "hangar.projects"
    label = "projects"
